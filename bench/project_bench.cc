// A model's projection without gradients: one BLAS call against
// internal::Project's row parts of at most 8 MB; prints one JSON object.
//
// For each shape (rows x in -> out, with a bias and without): the median of
// --rounds rounds of --reps calls each, the two alternated within a round, and
// whether their outputs are bitwise equal. Then the page faults the point is
// about, each in a fresh child process (this program again, --child) so that
// neither warms the other: after a "training-sized" product of --warm_rows
// rows (which touches OpenBLAS's work buffer up to that size), the pages one
// product of --big_rows rows touches for the first time beyond its output,
// as one call and as Project's parts.
//
//   project_bench [--rounds 5] [--reps 10] [--threads 2]
//                 [--warm_rows 15000] [--big_rows 127000]
//
// Exits 1 if parts were not bitwise one call's, or a child failed.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/peak_rss.h"
#include "trainer/internal/models.h"

namespace shardgnn {
namespace {

struct Shape {
  int64_t rows, in, out;
};

double MedianMs(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F>
double TimeMs(int reps, F&& f) {
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) f();
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
             .count() /
         reps;
}

// In a child (--child one|parts): the pages one projection of `big` rows of
// width `in` touches for the first time beyond its output, after one of
// `warm` rows, printed to stdout: the faults of the first such product less
// those of a second (whose fresh output faults as much: OpenBLAS's zeroing
// reads, then writes, each page of it).
int ChildFaults(bool parts, int64_t warm, int64_t big, int64_t in,
                int64_t out) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(1);
  torch::nn::Linear linear(torch::nn::LinearOptions(in, out).bias(false));
  const torch::Tensor x = torch::randn({big, in});
  const torch::Tensor warm_out =
      torch::mm(x.narrow(0, 0, warm), linear->weight.t());
  int64_t faults[2];
  for (int64_t& f : faults) {
    const int64_t before = MinorFaults();
    const torch::Tensor y =
        parts ? internal::Project(linear, x) : torch::mm(x, linear->weight.t());
    f = MinorFaults() - before;
    if (y.size(0) != big) return 1;
  }
  std::printf("%ld\n", static_cast<long>(faults[0] - faults[1]));
  return warm_out.size(0) == warm ? 0 : 1;
}

// Runs this program again as a child measuring one product's faults; -1 if
// it failed.
int64_t FaultsInChild(bool parts, int64_t warm, int64_t big, int64_t in,
                      int64_t out, int threads) {
  const std::string command =
      absl::StrCat("/proc/", getpid(), "/exe --child ", parts ? "parts" : "one",
                   " --warm_rows ", warm, " --big_rows ", big, " --in ", in,
                   " --out ", out, " --threads ", threads);
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  long faults = -1;
  if (std::fscanf(pipe, "%ld", &faults) != 1) faults = -1;
  return pclose(pipe) == 0 ? faults : -1;
}

int Main(int argc, char** argv) {
  int rounds = 5, reps = 10, threads = 2;
  int64_t warm_rows = 15000, big_rows = 127000, in = 128, out = 256;
  std::string child;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--child") {
      child = argv[i + 1];
      continue;
    }
    int64_t v = 0;
    if (!absl::SimpleAtoi(argv[i + 1], &v) || v < 1) {
      std::fprintf(stderr, "project_bench: %s needs a positive integer\n",
                   flag.c_str());
      return 2;
    }
    if (flag == "--rounds") {
      rounds = static_cast<int>(v);
    } else if (flag == "--reps") {
      reps = static_cast<int>(v);
    } else if (flag == "--threads") {
      threads = static_cast<int>(v);
    } else if (flag == "--warm_rows") {
      warm_rows = v;
    } else if (flag == "--big_rows") {
      big_rows = v;
    } else if (flag == "--in") {
      in = v;
    } else if (flag == "--out") {
      out = v;
    } else {
      std::fprintf(stderr, "project_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  warm_rows = std::min(warm_rows, big_rows);
  torch::set_num_threads(threads);
  if (!child.empty()) {
    return ChildFaults(child == "parts", warm_rows, big_rows, in, out);
  }
  torch::NoGradGuard no_grad;
  nlohmann::json result;
  result["threads"] = threads;
  const Shape shapes[] = {{127000, 128, 256},
                          {127000, 256, 16},
                          {60000, 128, 256},
                          {30000, 256, 256},
                          {20000, 1433, 64}};
  for (const Shape& s : shapes) {
    for (const bool bias : {true, false}) {
      torch::manual_seed(7);
      torch::nn::Linear linear(
          torch::nn::LinearOptions(s.in, s.out).bias(bias));
      const torch::Tensor x = torch::randn({s.rows, s.in});
      std::vector<double> one, parts;
      for (int r = 0; r < rounds; ++r) {
        one.push_back(TimeMs(reps, [&] { linear(x); }));
        parts.push_back(TimeMs(reps, [&] { internal::Project(linear, x); }));
      }
      const double one_ms = MedianMs(one), parts_ms = MedianMs(parts);
      result["products"].push_back(
          {{"rows", s.rows},
           {"in", s.in},
           {"out", s.out},
           {"bias", bias},
           {"one_call_ms", one_ms},
           {"parts_ms", parts_ms},
           {"parts_over_one", parts_ms / one_ms},
           {"bitwise_equal",
            torch::equal(linear(x), internal::Project(linear, x))}});
      std::fprintf(stderr, "%ld x %ld -> %ld%s: one call %.1f ms, parts %.1f\n",
                   static_cast<long>(s.rows), static_cast<long>(s.in),
                   static_cast<long>(s.out), bias ? " (bias)" : "", one_ms,
                   parts_ms);
    }
  }
  for (const int64_t width : {int64_t{128}, int64_t{256}}) {
    result["faults"].push_back(
        {{"warm_rows", warm_rows},
         {"rows", big_rows},
         {"in", width},
         {"out", 256},
         {"one_call",
          FaultsInChild(false, warm_rows, big_rows, width, 256, threads)},
         {"parts",
          FaultsInChild(true, warm_rows, big_rows, width, 256, threads)}});
  }
  std::printf("%s\n", result.dump(2).c_str());
  // A smoke run (tests/trainer) fails on what the figures rest on.
  bool ok = true;
  for (const auto& p : result["products"]) ok &= p["bitwise_equal"].get<bool>();
  for (const auto& f : result["faults"]) {
    ok &= f["one_call"].get<int64_t>() != -1 && f["parts"].get<int64_t>() != -1;
  }
  if (!ok) {
    std::fprintf(stderr,
                 "project_bench: a product in parts was not bitwise one "
                 "call's, or a child process failed\n");
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace shardgnn

int main(int argc, char** argv) {
  // LibTorch reports a failed allocation or a bad shape by throwing: one line
  // and a failed exit, not an abort.
  try {
    return shardgnn::Main(argc, argv);
  } catch (const std::exception& e) {
    const std::string what = e.what();  // LibTorch's: a backtrace follows.
    std::fprintf(stderr, "project_bench: %s\n",
                 what.substr(0, what.find('\n')).c_str());
    return 1;
  }
}
