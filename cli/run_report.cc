#include "cli/run_report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/config_file.h"
#include "common/file_util.h"
#include "common/progress.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace shardgnn::cli {
namespace {

using Json = nlohmann::json;

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

struct Series {
  std::string name;
  std::string color;
  std::vector<std::pair<double, double>> points;
  bool dashed = false;
};

// The pages' style sheet (a run's page and the comparison).
constexpr char kStyle[] =
    "<style>\n"
    "body{font-family:sans-serif;margin:24px;color:#222;max-width:1200px}\n"
    "h1{font-size:20px}h2{font-size:16px;margin-top:28px}\n"
    ".charts{display:flex;flex-wrap:wrap;gap:12px}\n"
    ".chart{border:1px solid #ddd;background:#fff}\n"
    ".chart .title{font-size:13px;font-weight:bold}\n"
    ".chart .tick{font-size:11px;fill:#444}\n"
    ".chart .grid{stroke:#eee}.chart .axis{stroke:#888}\n"
    ".chart .series{fill:none;stroke-width:2}\n"
    "table{border-collapse:collapse;font-size:13px}\n"
    "th,td{border:1px solid #ddd;padding:3px 8px;text-align:left}\n"
    "th{background:#f6f6f6;font-weight:normal;color:#555}\n"
    "</style>";

// Chart geometry (SVG user units).
constexpr double kWidth = 560, kHeight = 260;
constexpr double kLeft = 56, kRight = 150, kTop = 28, kBottom = 40;

// "Nice" tick values covering [lo, hi].
std::vector<double> Ticks(double lo, double hi, int count = 5) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step)
    ticks.push_back(t);
  return ticks;
}

std::string Number(double v) { return absl::StrFormat("%.4g", v); }

// The opening <svg> of a chart and its title.
std::string ChartStart(const std::string& title) {
  return absl::StrFormat(
      "<svg class=\"chart\" viewBox=\"0 0 %g %g\" width=\"%g\" height=\"%g\" "
      "role=\"img\" aria-label=\"%s\">\n"
      "<text x=\"%g\" y=\"16\" class=\"title\">%s</text>\n",
      kWidth, kHeight, kWidth, kHeight, Escape(title), kLeft, Escape(title));
}

// Horizontal grid lines and labels at `ticks` (py maps a value to y).
template <typename Y>
void AppendYGrid(const std::vector<double>& ticks, Y py, std::string* svg) {
  for (double t : ticks) {
    absl::StrAppendFormat(
        svg,
        "<line x1=\"%g\" x2=\"%g\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>"
        "<text x=\"%g\" y=\"%.1f\" class=\"tick\" "
        "text-anchor=\"end\">%s</text>\n",
        kLeft, kWidth - kRight, py(t), py(t), kLeft - 4, py(t) + 4, Number(t));
  }
}

// A line chart of `series` over x (epochs), with axes, ticks and a legend.
std::string LineChart(const std::string& title, const std::string& y_label,
                      const std::vector<Series>& series) {
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = x_lo, y_hi = -x_lo;
  for (const Series& s : series) {
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(y)) continue;
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
      y_lo = std::min(y_lo, y);
      y_hi = std::max(y_hi, y);
    }
  }
  if (!std::isfinite(x_lo)) return "<p>(no data)</p>";
  y_lo = std::min(y_lo, 0.0);
  if (x_hi == x_lo) x_hi = x_lo + 1;
  if (y_hi == y_lo) y_hi = y_lo + 1;
  const double plot_w = kWidth - kLeft - kRight,
               plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) {
    return kLeft + (x - x_lo) / (x_hi - x_lo) * plot_w;
  };
  auto py = [&](double y) {
    return kTop + plot_h - (y - y_lo) / (y_hi - y_lo) * plot_h;
  };
  std::string svg = ChartStart(title);
  AppendYGrid(Ticks(y_lo, y_hi), py, &svg);
  for (double t : Ticks(x_lo, x_hi, 8)) {
    if (std::fabs(t - std::round(t)) > 1e-9) continue;  // Whole epochs only.
    absl::StrAppendFormat(&svg,
                          "<text x=\"%.1f\" y=\"%g\" class=\"tick\" "
                          "text-anchor=\"middle\">%s</text>\n",
                          px(t), kTop + plot_h + 16, Number(t));
  }
  absl::StrAppendFormat(
      &svg,
      "<line x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\" class=\"axis\"/>"
      "<line x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\" class=\"axis\"/>\n"
      "<text x=\"%g\" y=\"%g\" class=\"tick\" text-anchor=\"middle\">epoch"
      "</text><text x=\"12\" y=\"%g\" class=\"tick\" transform=\"rotate(-90 "
      "12 %g)\" text-anchor=\"middle\">%s</text>\n",
      kLeft, kLeft + plot_w, kTop + plot_h, kTop + plot_h, kLeft, kLeft, kTop,
      kTop + plot_h, kLeft + plot_w / 2, kHeight - 6, kTop + plot_h / 2,
      kTop + plot_h / 2, Escape(y_label));
  int legend = 0;
  for (const Series& s : series) {
    std::string points;
    for (const auto& [x, y] : s.points) {
      if (std::isfinite(y))
        absl::StrAppendFormat(&points, "%.1f,%.1f ", px(x), py(y));
    }
    if (points.empty()) continue;
    absl::StrAppendFormat(
        &svg, "<polyline class=\"series\" points=\"%s\" stroke=\"%s\"%s/>\n",
        points, s.color, s.dashed ? " stroke-dasharray=\"6 4\"" : "");
    if (s.points.size() == 1) {
      absl::StrAppendFormat(
          &svg, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
          px(s.points[0].first), py(s.points[0].second), s.color);
    }
    const double ly = kTop + 10 + 18 * legend++;
    absl::StrAppendFormat(
        &svg,
        "<line x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\" stroke=\"%s\" "
        "stroke-width=\"3\"%s/><text x=\"%g\" y=\"%g\" "
        "class=\"tick\">%s</text>\n",
        kWidth - kRight + 12, kWidth - kRight + 34, ly, ly, s.color,
        s.dashed ? " stroke-dasharray=\"6 4\"" : "", kWidth - kRight + 40,
        ly + 4, Escape(s.name));
  }
  return svg + "</svg>\n";
}

struct Part {
  std::string name;
  std::string color;
  std::vector<double> values;  // One per epoch.
};

// Stacked bars, one per epoch.
std::string StackedBars(const std::string& title,
                        const std::vector<Part>& parts,
                        const std::vector<double>& epochs) {
  if (epochs.empty()) return "<p>(no data)</p>";
  double top = 0;
  for (size_t e = 0; e < epochs.size(); ++e) {
    double sum = 0;
    for (const Part& p : parts) sum += std::max(0.0, p.values[e]);
    top = std::max(top, sum);
  }
  if (!(top > 0)) top = 1;
  const std::vector<double> ticks = Ticks(0, top);
  top = std::max(top, ticks.back());
  const double plot_w = kWidth - kLeft - kRight,
               plot_h = kHeight - kTop - kBottom;
  auto py = [&](double y) { return kTop + plot_h - y / top * plot_h; };
  const double slot = plot_w / static_cast<double>(epochs.size());
  const double bar = std::max(1.0, slot * 0.7);
  std::string svg = ChartStart(title);
  AppendYGrid(ticks, py, &svg);
  const size_t label_every = std::max<size_t>(1, epochs.size() / 10);
  for (size_t e = 0; e < epochs.size(); ++e) {
    const double x = kLeft + slot * static_cast<double>(e) + (slot - bar) / 2;
    double base = 0;
    for (const Part& p : parts) {
      const double v = std::max(0.0, p.values[e]);
      if (v <= 0) continue;
      absl::StrAppendFormat(
          &svg,
          "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
          "height=\"%.1f\" fill=\"%s\"><title>epoch %s: %s %.3f "
          "s</title></rect>\n",
          x, py(base + v), bar, py(base) - py(base + v), p.color,
          Number(epochs[e]), Escape(p.name), v);
      base += v;
    }
    if (e % label_every == 0) {
      absl::StrAppendFormat(&svg,
                            "<text x=\"%.1f\" y=\"%g\" class=\"tick\" "
                            "text-anchor=\"middle\">%s</text>\n",
                            x + bar / 2, kTop + plot_h + 16, Number(epochs[e]));
    }
  }
  absl::StrAppendFormat(
      &svg,
      "<line x1=\"%g\" x2=\"%g\" y1=\"%g\" y2=\"%g\" class=\"axis\"/>\n"
      "<text x=\"%g\" y=\"%g\" class=\"tick\" "
      "text-anchor=\"middle\">epoch</text>"
      "<text x=\"12\" y=\"%g\" class=\"tick\" transform=\"rotate(-90 12 %g)\" "
      "text-anchor=\"middle\">seconds</text>\n",
      kLeft, kLeft + plot_w, kTop + plot_h, kTop + plot_h, kLeft + plot_w / 2,
      kHeight - 6, kTop + plot_h / 2, kTop + plot_h / 2);
  int legend = 0;
  for (const Part& p : parts) {
    const double ly = kTop + 4 + 18 * legend++;
    absl::StrAppendFormat(
        &svg,
        "<rect x=\"%g\" y=\"%g\" width=\"14\" height=\"12\" fill=\"%s\"/>"
        "<text x=\"%g\" y=\"%g\" class=\"tick\">%s</text>\n",
        kWidth - kRight + 12, ly, p.color, kWidth - kRight + 32, ly + 10,
        Escape(p.name));
  }
  return svg + "</svg>\n";
}

// A two-column table of an object's scalar fields (nested objects flattened
// with dotted keys; arrays shown as JSON).
void FlattenInto(const Json& j, const std::string& prefix,
                 std::vector<std::pair<std::string, std::string>>* rows) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object()) {
      FlattenInto(*it, key, rows);
    } else if (it->is_string()) {
      rows->emplace_back(key, it->get<std::string>());
    } else {
      rows->emplace_back(key, it->dump());
    }
  }
}

std::string Table(
    const std::vector<std::pair<std::string, std::string>>& rows) {
  std::string html = "<table>\n";
  for (const auto& [k, v] : rows) {
    absl::StrAppend(&html, "<tr><th>", Escape(k), "</th><td>", Escape(v),
                    "</td></tr>\n");
  }
  return html + "</table>\n";
}

double Get(const Json& j, const char* key, double fallback = NAN) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

// metrics.jsonl's epoch records in epoch order, the last record of an epoch
// kept (a resumed run appends); an unfinished last line is left out
// (*cut_short set); another line that is no epoch record is an error naming
// it.
absl::StatusOr<std::vector<Json>> ParseEpochs(const std::string& run_dir,
                                              const std::string& metrics_jsonl,
                                              bool* cut_short) {
  std::vector<Json> epochs;
  const std::vector<absl::string_view> lines =
      absl::StrSplit(metrics_jsonl, '\n');
  int line_number = 0;
  *cut_short = false;
  for (absl::string_view line : lines) {
    ++line_number;
    if (line.empty()) continue;
    Json j = Json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("epoch") || !j["epoch"].is_number()) {
      // The last line has no newline yet: being written, or cut short.
      if (line_number == static_cast<int>(lines.size())) {
        *cut_short = true;
        continue;
      }
      return absl::InvalidArgumentError(
          absl::StrCat(JoinPath(run_dir, "metrics.jsonl"), ": line ",
                       line_number, " is not an epoch record"));
    }
    epochs.push_back(std::move(j));
  }
  // The last record of an epoch wins: sorted stably, then the later kept.
  std::stable_sort(epochs.begin(), epochs.end(),
                   [](const Json& a, const Json& b) {
                     return a["epoch"].get<double>() < b["epoch"].get<double>();
                   });
  std::vector<Json> kept;
  for (size_t i = 0; i < epochs.size(); ++i) {
    if (i + 1 < epochs.size() && epochs[i + 1]["epoch"] == epochs[i]["epoch"]) {
      continue;
    }
    kept.push_back(std::move(epochs[i]));
  }
  return kept;
}

// "--flag value" pairs of summary.json's "config" (the training flags as
// given: a list of words), by flag; a flag without a value is "(set)".
std::map<std::string, std::string> ConfigFlags(const Json& summary) {
  std::map<std::string, std::string> flags;
  if (!summary.contains("config") || !summary["config"].is_array()) {
    return flags;
  }
  std::vector<std::string> words;
  for (const Json& word : summary["config"]) {
    words.push_back(word.is_string() ? word.get<std::string>() : word.dump());
  }
  for (size_t i = 0; i < words.size(); ++i) {
    if (!absl::StartsWith(words[i], "--")) continue;
    const bool has_value =
        i + 1 < words.size() && !absl::StartsWith(words[i + 1], "--");
    flags[words[i]] = has_value ? words[i + 1] : "(set)";
    if (has_value) ++i;
  }
  return flags;
}

}  // namespace

absl::StatusOr<std::string> RunReportHtml(const std::string& run_dir,
                                          const std::string& metrics_jsonl,
                                          const std::string& summary_json,
                                          const std::string& config_toml) {
  const bool finished = !summary_json.empty();
  const Json summary =
      finished ? Json::parse(summary_json, nullptr, false) : Json::object();
  if (!summary.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(JoinPath(run_dir, "summary.json"), ": not a JSON object"));
  }
  bool cut_short = false;
  ASSIGN_OR_RETURN(std::vector<Json> epochs,
                   ParseEpochs(run_dir, metrics_jsonl, &cut_short));

  Series loss{"train loss", "#1f77b4", {}}, val_loss{"val loss", "#ff7f0e", {}};
  // Node tasks plot accuracy; link tasks ROC-AUC (train batches, validation
  // pairs, test pairs).
  const bool link = summary.value("task", std::string("node")) == "link";
  const char* train_key = link ? "train_auc" : "train_acc";
  const char* val_key = link ? "valid_auc" : "val_acc";
  const char* test_key = link ? "test_auc" : "test_acc";
  const char* best_key = link ? "best_valid_auc" : "best_val_acc";
  const std::string score = link ? "ROC-AUC" : "accuracy";
  Series train_acc{link ? "train auc" : "train acc", "#1f77b4", {}},
      val_acc{link ? "val auc" : "val acc", "#ff7f0e", {}};
  std::vector<double> xs;
  Part compute{"compute", "#1f77b4", {}}, allreduce{"allreduce", "#9467bd", {}},
      waiting{"waiting for batches", "#d62728", {}},
      eval{"evaluation", "#2ca02c", {}}, other{"other", "#bbbbbb", {}};
  for (const Json& e : epochs) {
    const double x = e["epoch"].get<double>();
    xs.push_back(x);
    loss.points.emplace_back(x, Get(e, "loss"));
    val_loss.points.emplace_back(x, Get(e, "val_loss"));
    train_acc.points.emplace_back(x, Get(e, train_key));
    const double va = Get(e, val_key);
    val_acc.points.emplace_back(x, va >= 0 ? va : NAN);
    const double c = Get(e, "compute_seconds", 0),
                 a = Get(e, "allreduce_seconds", 0);
    const double w = Get(e, "wait_seconds", 0), ev = Get(e, "eval_seconds", 0);
    compute.values.push_back(c - a);
    allreduce.values.push_back(a);
    waiting.values.push_back(w);
    eval.values.push_back(ev);
    other.values.push_back(Get(e, "epoch_seconds", 0) - c - w - ev);
  }
  std::vector<Series> accuracy = {train_acc, val_acc};
  const double test = Get(summary, test_key);
  if (finished && test >= 0 && !xs.empty()) {
    Series t{absl::StrFormat("test %.4f", test), "#2ca02c", {}, true};
    t.points = {{xs.front(), test}, {xs.back(), test}};
    accuracy.push_back(t);
  }

  std::vector<std::pair<std::string, std::string>> figures;
  auto figure = [&](const std::string& name, const std::string& value) {
    figures.emplace_back(name, value);
  };
  if (!finished) {
    // The best epoch so far as the trainer ranks them (trainer.cc: the
    // highest validation score, ties to the lower validation loss).
    double best = NAN, best_loss = NAN;
    int best_epoch = 0;
    for (const Json& e : epochs) {
      const double v = Get(e, val_key), loss = Get(e, "val_loss");
      if (v >= 0 &&
          (std::isnan(best) || v > best || (v == best && loss < best_loss))) {
        best = v;
        best_loss = loss;
        best_epoch = static_cast<int>(Get(e, "epoch", 0));
      }
    }
    figure("status",
           absl::StrCat("no summary.json: the run is in progress, or stopped "
                        "before its end; ",
                        epochs.size(), " epochs recorded",
                        cut_short ? " (and one being written, left out)" : ""));
    figure("best validation " + score + " so far",
           std::isnan(best)
               ? std::string("none yet")
               : absl::StrFormat("%.4f at epoch %d", best, best_epoch));
  } else {
    figure(
        "test " + score,
        absl::StrFormat("%.4f (%s)", test,
                        summary.value("test_method", std::string("sampled"))));
    if (link) {
      std::string rest;
      for (const char* key : {"test_ap", "test_mrr", "test_hits@20",
                              "test_hits@50", "test_hits@100"}) {
        if (summary.contains(key)) {
          absl::StrAppend(&rest, rest.empty() ? "" : ", ", key + 5,
                          absl::StrFormat(" %.4f", Get(summary, key)));
        }
      }
      figure("other test figures", rest);
    }
    figure("best validation " + score,
           absl::StrFormat("%.4f at epoch %d", Get(summary, best_key),
                           static_cast<int>(Get(summary, "best_epoch", 0))));
    figure("epochs run",
           absl::StrFormat(
               "%d%s", static_cast<int>(epochs.size()),
               summary.value("stopped_early", false) ? " (stopped early)"
               : summary.value("epoch_budget_cut", false)
                   ? " (the epoch budget ended it while validation could still "
                     "improve)"
                   : ""));
    if (summary.contains("epoch_time")) {
      const Json& t = summary["epoch_time"];
      figure("throughput",
             absl::StrFormat("%s seeds/s (%.3f s per epoch of "
                             "training, %.0f%% waiting for batches)",
                             HumanCount(Get(t, "seeds_per_second", 0)),
                             Get(t, "step_seconds", 0),
                             100 * Get(t, "wait_fraction", 0)));
    }
    if (summary.contains("process")) {
      figure("peak RSS (rank 0)",
             HumanBytes(Get(summary["process"], "peak_rss_bytes", 0)));
    }
    if (summary.contains("cache")) {
      figure("feature cache hit rate",
             absl::StrFormat("%.1f%%",
                             100 * Get(summary["cache"], "hit_rate", 0)));
    }
    if (summary.contains("remote")) {
      const Json& r = summary["remote"];
      figure(
          "remote traffic (rank 0)",
          absl::StrCat(HumanCount(Get(r, "requests", 0)), " requests, ",
                       HumanBytes(Get(r, "feature_bytes", 0)), " features, ",
                       HumanBytes(Get(r, "shared_feature_bytes", 0)),
                       " from shared memory, ",
                       HumanBytes(Get(r, "neighbor_bytes", 0)), " neighbors, ",
                       HumanCount(Get(r, "failovers", 0)), " failovers"));
    }
    if (summary.contains("restarts")) {
      figure("trainer restarts", summary["restarts"].dump());
      const Json& servers = summary.value("server_restarts", Json::array());
      figure("server restarts",
             absl::StrCat(servers.is_array() ? servers.size() : 0));
    }
    figure("parameters",
           absl::StrCat(HumanCount(Get(summary, "num_parameters", 0)),
                        " (checksum ", summary.value("parameters_checksum", ""),
                        ")"));
  }

  std::vector<std::pair<std::string, std::string>> model, config, environment;
  if (summary.contains("model")) FlattenInto(summary["model"], "", &model);
  if (summary.contains("config")) {
    const Json& c = summary["config"];
    if (c.is_array()) {
      // The training flags as given to the trainers: "--flag value" pairs.
      std::string flags;
      for (const Json& word : c) {
        absl::StrAppend(
            &flags, flags.empty() ? "" : " ",
            word.is_string() ? word.get<std::string>() : word.dump());
      }
      config.emplace_back("flags", flags);
    } else if (c.is_object()) {
      FlattenInto(c, "", &config);
    }
  } else if (!config_toml.empty()) {
    // config.toml: the flags, then the values the flags left unset resolved
    // to, as comments (cli EffectiveConfig).
    ASSIGN_OR_RETURN(
        RunConfig run_config,
        ParseRunConfig(config_toml, JoinPath(run_dir, "config.toml")));
    std::map<std::string, std::string> values;
    for (const auto& [key, value] : run_config.flags) {
      values[key] = value;
      config.emplace_back(key, value);
    }
    for (const auto& [key, value] : run_config.resolved) values[key] = value;
    // The model as summary.json's "model" names it (keys in its order).
    const std::pair<const char*, const char*> model_keys[] = {
        {"average_decay", "average-decay"},
        {"batch_size", "batch-size"},
        {"dropout", "dropout"},
        {"feature_norm", "feature-norm"},
        {"heads", "heads"},
        {"hidden", "hidden"},
        {"kind", "model"},
        {"layers", "fanouts"},
        {"lr", "lr"},
        {"weight_decay", "weight-decay"}};
    for (const auto& [name, key] : model_keys) {
      auto it = values.find(key);
      if (it == values.end()) continue;
      const std::string& value = it->second;
      model.emplace_back(
          name,
          std::string(name) == "layers"
              ? absl::StrCat(1 + std::count(value.begin(), value.end(), ','))
              : value);
    }
  }
  for (const char* key :
       {"dataset_name", "mode", "world_size", "servers", "partition",
        "partition_id", "dataset", "steps_per_epoch", "train_seconds"}) {
    if (summary.contains(key)) {
      environment.emplace_back(key, summary[key].is_string()
                                        ? summary[key].get<std::string>()
                                        : summary[key].dump());
    }
  }
  if (summary.contains("process"))
    FlattenInto(summary["process"], "process", &environment);

  // The dataset the run trained on (summary.json; runs without it: none).
  const std::string dataset_name =
      summary.contains("dataset_name") && summary["dataset_name"].is_string()
          ? summary["dataset_name"].get<std::string>()
          : "";
  const std::string dataset_title =
      dataset_name.empty() ? "" : absl::StrCat(dataset_name, ", ");
  std::string html = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<title>shardgnn run report: ",
      Escape(dataset_title), Escape(run_dir), "</title>\n", kStyle,
      "</head><body>\n<h1>shardgnn run report",
      dataset_name.empty() ? "" : ": ", Escape(dataset_name), "</h1>\n<p>",
      Escape(run_dir), "</p>\n<h2>Results</h2>\n", Table(figures),
      "<h2>Per epoch</h2>\n<div class=\"charts\">\n",
      LineChart("Loss", "loss", {loss, val_loss}),
      LineChart(link ? "ROC-AUC" : "Accuracy", score, accuracy),
      StackedBars("Where each epoch's time went",
                  {compute, allreduce, waiting, eval, other}, xs),
      "</div>\n<h2>Model</h2>\n", Table(model), "<h2>Configuration</h2>\n",
      Table(config), "<h2>Environment</h2>\n", Table(environment),
      "</body></html>\n");
  return html;
}

absl::Status WriteRunReport(const std::string& run_dir) {
  ASSIGN_OR_RETURN(std::string metrics,
                   ReadFileToString(JoinPath(run_dir, "metrics.jsonl")));
  const std::string summary_path = JoinPath(run_dir, "summary.json");
  const std::string config_path = JoinPath(run_dir, "config.toml");
  std::error_code ec;
  std::string summary, config;
  if (std::filesystem::exists(summary_path, ec)) {
    ASSIGN_OR_RETURN(summary, ReadFileToString(summary_path));
  } else if (std::filesystem::exists(config_path, ec)) {
    ASSIGN_OR_RETURN(config, ReadFileToString(config_path));
  }
  ASSIGN_OR_RETURN(std::string html,
                   RunReportHtml(run_dir, metrics, summary, config));
  return WriteFileAtomic(JoinPath(run_dir, "report.html"), html);
}

absl::StatusOr<std::string> ComparisonReportHtml(
    const std::vector<std::string>& run_dirs) {
  // Distinct colors, one per run (they repeat past ten runs).
  static constexpr const char* kColors[] = {
      "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  std::vector<Series> val, loss, seconds;
  std::vector<std::map<std::string, std::string>> flags;
  std::vector<std::vector<std::pair<std::string, std::string>>> rows;
  bool any_link = false, any_node = false;
  for (size_t r = 0; r < run_dirs.size(); ++r) {
    const std::string& dir = run_dirs[r];
    ASSIGN_OR_RETURN(const std::string metrics,
                     ReadFileToString(JoinPath(dir, "metrics.jsonl")));
    std::error_code ec;
    Json summary = Json::object();
    const std::string summary_path = JoinPath(dir, "summary.json");
    if (std::filesystem::exists(summary_path, ec)) {
      ASSIGN_OR_RETURN(const std::string text, ReadFileToString(summary_path));
      summary = Json::parse(text, nullptr, false);
      if (!summary.is_object()) {
        return absl::InvalidArgumentError(
            absl::StrCat(summary_path, ": not a JSON object"));
      }
    }
    bool cut_short = false;
    ASSIGN_OR_RETURN(const std::vector<Json> epochs,
                     ParseEpochs(dir, metrics, &cut_short));
    const bool link = summary.value("task", std::string("node")) == "link";
    any_link = any_link || link;
    any_node = any_node || !link;
    // Runs by their directory's last component, numbered when equal.
    std::string name = std::filesystem::path(dir).filename().string();
    if (name.empty())
      name = std::filesystem::path(dir).parent_path().filename();
    name = absl::StrCat(r + 1, ": ", name);
    const char* color = kColors[r % (sizeof(kColors) / sizeof(kColors[0]))];
    Series v{name, color, {}}, l{name, color, {}}, t{name, color, {}};
    for (const Json& e : epochs) {
      const double x = e["epoch"].get<double>();
      const double score = Get(e, link ? "valid_auc" : "val_acc");
      v.points.emplace_back(x, score >= 0 ? score : NAN);
      l.points.emplace_back(x, Get(e, "loss"));
      t.points.emplace_back(x, Get(e, "epoch_seconds"));
    }
    val.push_back(std::move(v));
    loss.push_back(std::move(l));
    seconds.push_back(std::move(t));
    flags.push_back(ConfigFlags(summary));
    std::vector<std::pair<std::string, std::string>> row = {
        {"run", name},
        {"directory", dir},
        {"dataset", summary.value("dataset_name", std::string("?"))},
    };
    if (summary.contains("model") && summary["model"].is_object()) {
      const Json& m = summary["model"];
      const std::string kind = m.value("kind", std::string("?"));
      std::string text = absl::StrFormat("%s, %d layers", kind,
                                         static_cast<int>(Get(m, "layers", 0)));
      if (kind != "script") {
        absl::StrAppend(&text,
                        absl::StrFormat(", hidden %d",
                                        static_cast<int>(Get(m, "hidden", 0))));
      }
      row.emplace_back("model", text);
    }
    const double test = Get(summary, link ? "test_auc" : "test_acc");
    row.emplace_back(link ? "test auc" : "test acc",
                     std::isnan(test) ? std::string("unfinished")
                                      : absl::StrFormat("%.4f", test));
    row.emplace_back(
        "best validation",
        summary.contains("best_epoch")
            ? absl::StrFormat(
                  "%.4f at epoch %d",
                  Get(summary, link ? "best_valid_auc" : "best_val_acc"),
                  static_cast<int>(Get(summary, "best_epoch", 0)))
            : std::string("-"));
    row.emplace_back("epochs", absl::StrCat(epochs.size()));
    if (summary.contains("epoch_time")) {
      const Json& et = summary["epoch_time"];
      row.emplace_back("s per epoch",
                       absl::StrFormat("%.3f", Get(et, "epoch_seconds", 0)));
      row.emplace_back("seeds/s", HumanCount(Get(et, "seeds_per_second", 0)));
    }
    row.emplace_back("parameters checksum",
                     summary.value("parameters_checksum", std::string("-")));
    rows.push_back(std::move(row));
  }
  // The results: a row per run, a column per figure (the first run's).
  std::string results = "<table>\n<tr>";
  for (const auto& [key, value] : rows.front()) {
    absl::StrAppend(&results, "<th>", Escape(key), "</th>");
  }
  results += "</tr>\n";
  for (const auto& row : rows) {
    results += "<tr>";
    for (const auto& [key, unused] : rows.front()) {
      std::string value = "-";
      for (const auto& [k, v] : row) {
        if (k == key) value = v;
      }
      absl::StrAppend(&results, "<td>", Escape(value), "</td>");
    }
    results += "</tr>\n";
  }
  results += "</table>\n";
  // The flags whose values differ between runs (absent: "-").
  std::map<std::string, bool> all;
  for (const auto& f : flags) {
    for (const auto& [k, unused] : f) all[k] = true;
  }
  std::vector<std::pair<std::string, std::string>> differing;
  for (const auto& [key, unused] : all) {
    std::vector<std::string> values;
    bool differ = false;
    for (const auto& f : flags) {
      auto it = f.find(key);
      values.push_back(it == f.end() ? "-" : it->second);
      differ = differ || values.back() != values.front();
    }
    if (differ) differing.emplace_back(key, absl::StrJoin(values, " | "));
  }
  const std::string score = any_link && any_node ? "accuracy / ROC-AUC"
                            : any_link           ? "ROC-AUC"
                                                 : "accuracy";
  std::vector<std::string> names;
  for (const auto& row : rows) names.push_back(row.front().second);
  return absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<title>shardgnn runs compared: ",
      Escape(absl::StrJoin(names, ", ")), "</title>\n", kStyle,
      "</head><body>\n<h1>shardgnn runs compared</h1>\n"
      "<h2>Results</h2>\n",
      results, "<h2>Per epoch</h2>\n<div class=\"charts\">\n",
      LineChart("Validation " + score, score, val),
      LineChart("Training loss", "loss", loss),
      LineChart("Epoch time", "seconds", seconds),
      "</div>\n<h2>Flags that differ</h2>\n",
      differing.empty() ? std::string("<p>none</p>\n") : Table(differing),
      "</body></html>\n");
}

absl::Status WriteComparisonReport(const std::vector<std::string>& run_dirs,
                                   const std::string& out_path) {
  if (run_dirs.empty()) {
    return absl::InvalidArgumentError("no run directory to compare");
  }
  ASSIGN_OR_RETURN(const std::string html, ComparisonReportHtml(run_dirs));
  return WriteFileAtomic(out_path, html);
}

}  // namespace shardgnn::cli
