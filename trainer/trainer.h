// Training GNN models on sampled minibatches: model options, the training loop,
// and what it reports.
//
// Train() runs one trainer's whole run over any GraphSource (in memory, or the
// storage servers through the remote source): each epoch it shuffles the train
// nodes with a seeded shuffle, samples a minibatch per step (the next one on a
// background thread while the current one trains), runs forward, backward, an
// optional gradient synchronisation (data parallelism: gradient_sync.h,
// c10d_gradient_sync.h) and an Adam step, then measures validation accuracy.
// The parameters of the best validation epoch are kept and used for the final
// test accuracy; checkpoints allow an exact resume. All randomness derives from
// TrainOptions::seed through counter-based streams (no global RNG), so a run is
// reproducible and independent of threads and prefetching. LibTorch errors
// (c10::Error) are caught here and returned as Status; no torch type appears in
// this header. Train() is thread-compatible: separate runs may share a source.
#ifndef SHARDGNN_TRAINER_TRAINER_H_
#define SHARDGNN_TRAINER_TRAINER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/types.h"
#include "sampler/graph_source.h"
#include "sampler/link_batcher.h"

namespace shardgnn {

class GradientSync;
class LearnableRows;

// kMlp ignores the graph (each layer sees only the node's own state): the
// baseline a GNN must beat. Give it fanouts of 0 to skip sampling. kRgcn and
// kHeteroSage are for typed graphs (sampler/graph_schema.h), over per-type
// input projections: R-GCN (Schlichtkrull et al. 2018), a weight per
// relation from shared bases; HeteroSAGE, a GraphSAGE mean and weight per
// relation, summed over relations.
// Seeds for the different random streams of a run (MixSeed(TrainOptions::
// seed, stream)), so that none repeats another: the training loader's shuffle
// and sampling (the Python package's NeighborLoader derives its seeds the same
// way, so that its batches are the trainer's), evaluation sampling
// (trainer/internal/node_task.cc, link_task.cc), the model, pre-training.
inline constexpr uint64_t kShuffleStream = 1;
inline constexpr uint64_t kTrainSampleStream = 2;
inline constexpr uint64_t kEvalSampleStream = 3;
inline constexpr uint64_t kModelStream = 4;
inline constexpr uint64_t kPretrainStream = 5;

// kScript: the user's TorchScript module (ModelOptions::script_path;
// trainer/internal/script_model.h), given by `--model-script`.
enum class ModelKind {
  kSage,
  kGcn,
  kGat,
  kMlp,
  kRgcn,
  kHeteroSage,
  kGine,
  kScript
};

// Whether `kind` is a model of typed graphs (and only of them).
bool IsTypedModel(ModelKind kind);

// "sage", "gcn", "gat", "mlp", "rgcn", "heterosage", "gine", "script"
// (case-insensitive).
absl::StatusOr<ModelKind> ParseModelKind(const std::string& name);
const char* ModelKindName(ModelKind kind);

// How input features are scaled before the first layer (per row, so a node's
// input never depends on the batch it is in).
enum class FeatureNorm {
  kNone,
  // Divide each row by its L1 norm (Kipf & Welling's preprocessing of
  // bag-of-words features). A row's entries then shrink with its number of
  // non-zeros: on dense rows (hundreds of words) GCN stalls 21 points short.
  kRow,
  // Divide each row by its L2 norm: every row has length 1, whatever its
  // number of non-zeros or the features' units (the automatic choice for
  // non-negative features).
  kRowL2,
  // Subtract each column's mean and divide by its standard deviation
  // (FeatureTransform::shift / scale), for signed or dense features.
  kStandardize,
};

// "none", "row", "row-l2", "standardize" (ParseFeatureNorm reads them back).
const char* FeatureNormName(FeatureNorm norm);
absl::StatusOr<FeatureNorm> ParseFeatureNorm(const std::string& name);

struct FeatureTransform {
  FeatureNorm norm = FeatureNorm::kNone;
  std::vector<float> shift;  // kStandardize: per column; x' = (x - shift) *
  std::vector<float> scale;  // scale.
};

struct ModelOptions {
  ModelKind kind = ModelKind::kSage;
  int num_layers = 2;    // Must equal the number of fanouts.
  int64_t hidden = 256;  // Hidden width (per head for GAT).
  int heads =
      8;  // GAT attention heads in hidden layers (the output layer has one).
  double dropout = 0.5;       // Before every layer, on the input features too.
  double attn_dropout = 0.6;  // GAT: on attention coefficients.
  FeatureTransform features;
  // R-GCN: the bases each relation's weight is a combination of; 0: as many
  // as relations, up to 8.
  int num_bases = 0;
  // GINE: the width of the graph's edge features (set from the graph when
  // the model is made).
  int64_t edge_feature_dim = 0;
  // Typed graphs: the graph's relations (set from its schema when the model
  // is made).
  int num_relations = 0;
  // kScript: the TorchScript file (docs/formats.md, "Model scripts"); its
  // layers' widths and dropout are its own (hidden, heads and dropout are
  // not used).
  std::string script_path;
};

// The defaults for each model, from the models' papers and checked across the
// bundled datasets (docs/benchmarks.md, bench/quality): hidden width, heads,
// dropout, learning rate, the training schedule (the most epochs, and the
// patience of early stopping on validation; 0 = none) and the decay of the
// parameters' moving average (TrainOptions::average_decay) for node tasks.
// Everything else keeps TrainOptions' defaults.
struct ModelDefaults {
  int64_t hidden;
  int heads;
  double dropout;
  double attn_dropout;
  double lr;
  int epochs;
  int patience;
  double average_decay;
};
ModelDefaults DefaultsFor(ModelKind kind);

// What a run learns (the task seam: trainer/internal/task.h).
enum class TaskKind {
  kNode,  // Node classification: seed nodes, labels, cross-entropy, accuracy.
  kLink,  // Link prediction: seed edges and negatives, BCE, AUC/AP/MRR/Hits.
};
// "node", "link" (ParseTaskKind reads them back).
const char* TaskKindName(TaskKind kind);
absl::StatusOr<TaskKind> ParseTaskKind(const std::string& name);

// How a link-prediction model scores a pair from its endpoints' embeddings.
enum class LinkDecoder {
  kDot,  // <h_u, h_v> (GAE).
  kMlp,  // Linear-ReLU-Linear on h_u * h_v (OGB's LinkPredictor).
};
const char* LinkDecoderName(LinkDecoder decoder);
absl::StatusOr<LinkDecoder> ParseLinkDecoder(const std::string& name);

struct LinkOptions {
  LinkDecoder decoder = LinkDecoder::kDot;
  int negatives = 1;  // Negative pairs per positive in training batches.
  NegativeSampling negative_sampling = NegativeSampling::kUniform;
  // Redraw a training negative that is a train edge (either direction) or a
  // self loop.
  bool filter_negatives = false;
  // Drop each batch's target edges from its sampled neighborhoods. Only a
  // leakage experiment turns it off.
  bool exclude_targets = true;
  // Hits@K reported for each K (OGB: 20, 50, 100), each positive ranked
  // against all negatives of its split.
  std::vector<int> hits_k = {20, 50, 100};
};

struct EpochStats {
  int epoch = 0;  // From 1.
  int64_t steps = 0;
  double loss = 0.0;  // Mean over labeled train seeds.
  // On the sampled train batches (with dropout): the fraction of seeds
  // labeled right, or (link) of pairs on the right side of score 0.
  double train_acc = 0.0;
  double val_acc = 0.0;   // -1 if there is no validation split.
  double val_loss = 0.0;  // Mean loss on the validation split.
  // The validation figure that chooses the kept epoch (higher is better):
  // val_acc for node tasks, the validation ROC-AUC for link tasks; -1 when
  // there is nothing to validate on.
  double val_score = -1.0;
  // The task's other figures of the epoch under plain keys (link tasks:
  // "train_auc", the mean ROC-AUC of the train batches, with dropout;
  // "valid_auc", "valid_ap", "valid_mrr", "valid_hits@20", ...; empty for
  // node tasks).
  std::vector<std::pair<std::string, double>> metrics;
  // Time the loop waited for minibatches: sampling, features and labels that
  // did not overlap compute (all of it without prefetch).
  double sample_seconds = 0.0;
  // Time spent building minibatches, overlapped or not (those sampled
  // during the previous epoch's validation included).
  double sample_busy_seconds = 0.0;
  // The part of sample_busy_seconds spent fetching input features.
  double fetch_seconds = 0.0;
  // Forward, backward, gradient sync and optimizer step.
  double compute_seconds = 0.0;
  // The part of compute spent in gradient synchronisation.
  double sync_seconds = 0.0;
  double eval_seconds = 0.0;
  double epoch_seconds = 0.0;
  // This rank's part of the epoch's train seeds (TrainOptions::shares():
  // its weight over all ranks'; 1 / world_size otherwise) and its speed,
  // seeds per second of the epoch's time outside the gradient allreduce.
  double share = 1.0;
  double seeds_per_second = 0.0;
  int64_t sampled_edges = 0;
  // Minor page faults of the whole process (every thread: compute, sampler
  // threads, receive paths) while the epoch's training steps ran, and while
  // its validation ran: fresh memory touched. Steady-state training should
  // reuse its buffers (issue 17).
  int64_t minor_faults = 0;
  int64_t eval_minor_faults = 0;
  // This process's CPU time (user + system, every thread) over the epoch's
  // steps and validation: against epoch_seconds, the cores it kept busy.
  double cpu_seconds = 0.0;
  // Learnable embeddings (TrainOptions::embeddings), over the epoch's
  // training steps: rows pulled and pushed, seconds in pulls (waits for the
  // owners' step clocks included) and waiting for earlier pushes.
  int64_t embedding_rows_pulled = 0;
  int64_t embedding_rows_pushed = 0;
  double embedding_pull_seconds = 0.0;
  double embedding_push_wait_seconds = 0.0;
  // The tables' snapshot taken with this epoch's checkpoint (rank 0; 0: none).
  double embedding_snapshot_seconds = 0.0;
  int64_t embedding_snapshot_bytes = 0;
  // The loader's background sampling threads in this epoch, and (when
  // chosen by measurement, TrainOptions::max_sampler_threads) why the next
  // epoch runs another number (empty: it does not).
  int sampler_threads = 0;
  std::string sampler_threads_change;
  // Minor page faults of the storage servers (all of them, whichever
  // trainers they served) from the previous epoch's end to this one's; -1:
  // not measured (in process, or not the leader). Set by the CLI's leader.
  int64_t server_minor_faults = -1;
  // Their CPU time (user + system) over the same span; -1: not measured.
  double server_cpu_seconds = -1;
};

// One training step of this rank, as TrainOptions::on_step sees it.
struct StepStats {
  int epoch = 0;      // From 1.
  int64_t step = 0;   // Steps done in the epoch, this one included.
  int64_t steps = 0;  // The epoch's step count.
  // What the step trained on: labeled seeds (node tasks) or scored pairs
  // (link tasks), and the edges sampled for it.
  int64_t examples = 0;
  int64_t sampled_edges = 0;
  // The wait for the minibatch (sampling, features and labels that did not
  // overlap compute), and the step itself: forward, backward, gradient sync
  // (sync_seconds of it) and optimizer step.
  double wait_seconds = 0.0;
  double compute_seconds = 0.0;
  double sync_seconds = 0.0;
  // This rank's batch loss (the task's mean); NaN when the batch had no
  // labeled seeds.
  double loss = 0.0;
};

struct TrainOptions {
  TaskKind task = TaskKind::kNode;
  LinkOptions link;  // kLink only.
  ModelOptions model;
  std::vector<int> fanouts = {
      10, 10};  // fanouts[0] is the seeds' hop (sampler/neighbor_sampler.h).
  // Fanouts for validation and test. Empty: validation (every epoch, only to
  // rank the epochs) samples with the training fanouts, and the final test
  // with DefaultEvalFanouts(fanouts), twice them (a sampled evaluation is a
  // noisy one: on the bundled graphs, twice the fanouts score as full
  // neighborhoods do, within 0.3 points, while -1 is exact but can reach most
  // of a large power-law graph within three hops).
  std::vector<int> eval_fanouts;
  // Typed graphs: per-relation fanouts (sampler/graph_schema.h
  // ParseRelationFanouts: "writes=10,cites=5,2;..."), resolved against the
  // graph's relations when the run starts; `fanouts` then holds one entry per
  // layer. Evaluation samples with them doubled unless eval_fanouts says
  // otherwise. Empty: every relation with `fanouts`.
  std::string relation_fanouts;
  int64_t batch_size = 1024;
  // 0: StepsPerEpoch(train, batch_size, min_steps_per_epoch). Otherwise
  // exactly this many (every data-parallel rank must run the same number):
  // past the end of the shuffled train list the batches wrap around it (pad);
  // steps beyond the count are not run (trim).
  int64_t steps_per_epoch = 0;
  // The fewest optimizer steps an epoch has, so that a graph with few labels
  // (140 on Cora) is not trained with one step per epoch; such epochs pass
  // over the train nodes several times, each batch holding distinct nodes.
  int64_t min_steps_per_epoch = 10;
  // Minibatches sampled ahead of the training thread by background threads
  // (sampler/loader.h; the GraphSource must be thread-safe, as the interface
  // requires); the next epoch's are begun while an epoch validates. 0
  // samples on the training thread. Results do not depend on it.
  int prefetch = 4;
  // Background sampling threads when prefetch > 0. With max_sampler_threads
  // above it, the number is chosen from measurement between the two after
  // every epoch (trainer/internal/pipeline_tuner.h): more while the steps
  // wait for batches. Results do not depend on it.
  int sampler_threads = 1;
  int max_sampler_threads = 0;
  // Compute threads for this process: LibTorch's intra-op pool and OpenBLAS
  // (trainer/compute_env.h SetComputeThreads); 0 = every core of the machine.
  // (The CLI decides a share when several trainers run on one machine.)
  int torch_threads = 0;
  // Validation and test batches hold at most this many nodes, all of one
  // size give or take one (ceil(nodes / eval_batch_size) batches).
  int64_t eval_batch_size = 4096;
  int epochs = 10;
  // Stop after this many epochs without a better validation accuracy (the
  // best parameters are kept either way); 0 never stops early.
  int patience = 0;
  double lr = 0.01;
  double weight_decay = 5e-4;
  // Validation, the best-on-validation choice, and so the model that is
  // tested and written, use a moving average of the parameters over the
  // steps (Polyak averaging): after the first optimizer step it is the
  // parameters, after every later one avg <- d * avg + (1 - d) * params,
  // with d = average_decay; 0 = the parameters as trained. It smooths the
  // minibatch gradient's noise, which on graphs with few or weak labels
  // costs up to a point of accuracy against full-batch training. Kept in the
  // checkpoints. Not with learned embeddings (their rows on the servers are
  // not averaged): refused.
  double average_decay = 0.0;
  uint64_t seed =
      0;  // Parameters, dropout, shuffles and sampling all derive from it.
  int64_t num_classes = 0;  // 0: one more than the largest train label.
  // If set, the run's state (parameters, optimizer, epoch, best-on-validation
  // parameters, dropout counter, history) is written there atomically every
  // checkpoint_every epochs (0: none) and after the last one (also when
  // stopped early). A resumed run continues from the last one written.
  std::string checkpoint_path;
  int checkpoint_every = 1;
  // Continue from checkpoint_path when it exists (otherwise start afresh).
  // The checkpoint must come from a run with the same model, sizes and seed;
  // the resumed run then continues exactly as the uninterrupted one would.
  // A checkpoint written with other training settings (lr, weight decay,
  // batch size, steps per epoch, fanouts, dropout, feature scaling) is
  // refused, naming each difference, unless allow_changed_settings (then the
  // run continues with the new ones). --epochs, --patience and checkpointing
  // may change.
  bool resume = false;
  bool allow_changed_settings = false;
  // Compute the final test accuracy exactly, by layer-wise inference over
  // full neighborhoods (trainer/inference.h), instead of sampling with the
  // eval fanouts. Every rank computes its share of every layer
  // (rank / world_size, the same as the sync's), keeping the layers' states
  // in scratch_dir (local disk; empty: the system's temporary directory),
  // removed afterwards.
  bool exact_test = false;
  // Learnable node embeddings (issue 15; sampler/embedding_rows.h): when
  // set, every input node's row of this table is appended to its features
  // (or, with ignore_features, is its whole input) and trained with the
  // model: a training step pulls its batch's rows before the forward pass
  // and pushes their gradient after backward (the table's owner applies it
  // with its sparse optimizer; weight decay does not apply). Not owned. Not
  // yet with resume or exact_test.
  LearnableRows* embeddings = nullptr;
  bool ignore_features = false;
  // With embeddings: epochs of self-supervised pre-training of the rows on
  // the graph's structure before the task (trainer/internal/pretrain_rows.h:
  // DeepWalk's objective over short walks from every node). The rows are then
  // frozen: the task reads them as inputs, as it reads features, and trains
  // only the model, whose best-on-validation parameters are then kept as
  // without embeddings. 0: none, the rows are trained with the model. Not
  // with resume.
  int pretrain_epochs = 0;
  // (Frozen rows are read scaled to FrozenRowLength.)
  // Called after every pre-training epoch (progress lines); may be empty.
  std::function<void(int epoch, double loss, double seconds)> on_pretrain_epoch;
  int rank = 0;
  int world_size = 1;
  // Data-parallel shares of each step's seeds (node tasks, world_size > 1).
  // Unset (no weights, not adapted): every rank trains on its own part of
  // the train split (TrainSplits::train), batch_size seeds a step. Set:
  // every rank's TrainSplits::train is the whole train split, in the same
  // order, and each step's global batch of batch_size * world_size seeds is
  // cut among the ranks by weight (sampler/loader.h SetShares):
  // `share_weights` (one per rank, positive) at first, equal if empty; with
  // adapt_shares, after every epoch, the weights follow the ranks' measured
  // speeds (seeds per second of the epoch's time outside the gradient
  // allreduce, averaged with the speed before; a rank gets at least an
  // eighth of the fastest one's weight, and speeds within 10% of the
  // fastest's keep equal weights).
  // Each rank's loss is weighted by its part of the global batch, so that
  // the averaged gradient is the global batch's mean loss's gradient
  // whatever the shares. A resumed run starts again from share_weights.
  std::vector<int64_t> share_weights;
  bool adapt_shares = false;
  bool shares() const {
    return world_size > 1 && (adapt_shares || !share_weights.empty());
  }
  std::string scratch_dir;
  // If set, the kept parameters are written there at the end, by name, in the
  // format of Python's torch.save (model.pt; trainer/model_config.h).
  std::string model_path;
  // A model script's run (ModelKind::kScript): the module with the kept
  // parameters is written there at the end (model_script.pt), as TorchScript.
  std::string model_script_path;
  // Called after every epoch (progress lines, metrics files); may be empty.
  std::function<void(const EpochStats&)> on_epoch;
  // Called after every training step (progress lines within long epochs,
  // the trainer's metrics: trainer/training_metrics.h); may be empty.
  std::function<void(const StepStats&)> on_step;
  // Called during the final test evaluation with the work done and in all
  // (batches of test nodes; with exact_test, node rows over all layers); may
  // be empty.
  std::function<void(int64_t done, int64_t total)> on_test_progress;
  // Called once when the run resumes from checkpoints (every rank agreed on
  // the epoch), with the epoch it continues after; not for a fresh start.
  std::function<void(int epoch)> on_resume;
};

// The nodes each split trains on or is measured on (global IDs).
// Node tasks: train/valid/test nodes, this rank's share. Link tasks: the
// node pairs (flattened u0, v0, u1, v1, ...) of the edge splits, the whole
// lists on every rank (each trains and evaluates its share, rank /
// world_size): train edges, and valid/test positives with their negatives.
struct TrainSplits {
  std::vector<NodeId> train;
  std::vector<NodeId> valid;
  std::vector<NodeId> test;
  std::vector<NodeId> train_edges;
  std::vector<NodeId> valid_edges, valid_negatives;
  std::vector<NodeId> test_edges, test_negatives;
};

struct TrainResult {
  std::vector<EpochStats> epochs;
  bool stopped_early = false;  // By `patience`.
  // TrainOptions::pretrain_epochs: each epoch's mean loss per positive pair
  // (this trainer's pairs), and the time and steps of the whole phase.
  std::vector<double> pretrain_loss;
  double pretrain_seconds = 0.0;
  int64_t pretrain_steps = 0;
  // The epoch budget (TrainOptions::epochs) ended the run while validation
  // could still improve: with patience, before it ran out; without, the best
  // epoch was the last. False without a validation split.
  bool budget_cut = false;
  int64_t steps_per_epoch = 0;
  // The loader's sampling threads at the end (TrainOptions::sampler_threads).
  int sampler_threads = 0;
  double checkpoint_seconds = 0.0;  // Writing checkpoints, all epochs.
  int64_t checkpoint_bytes = 0;     // Size of one checkpoint file.
  // With learned embeddings: the last snapshot of the tables taken with the
  // checkpoints (rank 0's figures; its time is in checkpoint_seconds).
  int64_t embedding_snapshot_bytes = 0;
  int64_t embedding_snapshot_rows = 0;
  int best_epoch = 0;  // Epoch whose parameters were kept (the last one without
                       // a validation split).
  double best_val_acc = -1.0;    // Node tasks.
  double best_val_score = -1.0;  // EpochStats::val_score of best_epoch.
  double test_acc = -1.0;        // Node tasks; -1 if there is no test split.
  // The task's test figures under plain keys ("test_acc"; "test_auc",
  // "test_ap", "test_mrr", "test_hits@20", ...).
  std::vector<std::pair<std::string, double>> test_metrics;
  // The test pass: its time, the minor page faults of the whole process
  // during it (as EpochStats::minor_faults), and its batches (sampled test;
  // 0 for the exact test). It samples with larger fanouts than validation
  // (DefaultEvalFanouts), so its first batches grow buffers to its sizes;
  // test_second_half_minor_faults, the faults from when half its batches
  // were done to its end, shows whether the rest run in them (-1: fewer
  // than 2 batches).
  double test_seconds = 0.0;
  int64_t test_minor_faults = 0;
  int64_t test_second_half_minor_faults = -1;
  int64_t test_batches = 0;
  int64_t num_parameters = 0;
  // XXH64 over the final (kept) parameters' bytes, in order, as hex: equal
  // runs (the same seed and settings, however their servers failed over or
  // their trainers restarted) have equal checksums.
  std::string parameters_checksum;
  int resumed_from_epoch = 0;  // Epochs restored from a checkpoint (0: none).
};

// Each fanout doubled (-1, all neighbors, stays).
std::vector<int> DefaultEvalFanouts(const std::vector<int>& fanouts);

// The L2 length pre-trained (frozen) learned rows are scaled to as the
// model's input: 1 when they are its whole input, 0.3 beside features, so
// that they add to the features rather than draw the model away from them
// (Cora: 0.781 test accuracy at length 1, 0.809 at 0.3, 0.800 without rows;
// docs/benchmarks.md, "Learned embeddings").
double FrozenRowLength(bool with_features);

// Steps per epoch for `num_seeds` train nodes (the largest rank's share):
// ceil(num_seeds / batch_size), at least min_steps.
int64_t StepsPerEpoch(int64_t num_seeds, int64_t batch_size, int64_t min_steps);

// Chooses how to scale `source`'s features, from a sample of up to
// `sample_size` nodes picked with `seed` (the same on every trainer of a run,
// so all choose alike): rows of non-negative values (bag of words, counts,
// weights) are divided by their L2 norm; features with negative values are
// standardised with the sample's column means and deviations (columns that do
// not vary are left unscaled). `requested` kNone, kRow or kRowL2 is returned as
// is; with kStandardize the statistics are estimated. Fails on GraphSource
// errors and on non-finite feature values (naming the node).
struct FeatureNormChoice {
  bool automatic = true;  // The caller asked for "auto".
  FeatureTransform transform;
  int64_t sampled_nodes = 0;
  float min_value = 0, max_value = 0;  // Over the sample.
  std::string reason;                  // One line for the run's log.
};
absl::StatusOr<FeatureNormChoice> ChooseFeatureNorm(const GraphSource& source,
                                                    bool automatic,
                                                    FeatureNorm requested,
                                                    uint64_t seed,
                                                    int64_t sample_size = 4096);

// Trains a model on `source` (which must have features; node tasks labels).
// `sync` may be null (single process); when set it is called to broadcast the
// initial parameters and to average gradients after every backward pass. Fails
// on invalid options (fanouts vs layers, empty train split), on any GraphSource
// error, and on LibTorch errors, with the cause in the message.
absl::StatusOr<TrainResult> Train(const GraphSource& source,
                                  const TrainSplits& splits,
                                  const TrainOptions& options,
                                  GradientSync* sync = nullptr);

}  // namespace shardgnn

#endif  // SHARDGNN_TRAINER_TRAINER_H_
