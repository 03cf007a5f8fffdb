// Reading a Prometheus endpoint in tests: one GET over a plain loopback
// socket, and the samples of the text exposition format by their series.
#ifndef SHARDGNN_TESTS_TESTING_SCRAPE_H_
#define SHARDGNN_TESTS_TESTING_SCRAPE_H_

#include <map>
#include <string>

namespace shardgnn::testing {

// "GET <path> HTTP/1.0" to 127.0.0.1:port; the whole answer, head and body,
// or "" if the connection failed. Gives up after 10 s.
std::string HttpGet(int port, const std::string& path = "/metrics");

// The body's samples by series, as written: `name{k="v",...}` (or `name`)
// -> value. Comments and blank lines are skipped; so is the head of an HTTP
// answer, up to its blank line.
std::map<std::string, double> ParseSamples(const std::string& text);

}  // namespace shardgnn::testing

#endif  // SHARDGNN_TESTS_TESTING_SCRAPE_H_
