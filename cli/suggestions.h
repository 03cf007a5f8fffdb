// "Did you mean ...?" for a mistyped subcommand, flag or --config key: the
// known name nearest the typed one by edit distance, when it is near enough
// to be a likely typo.
#ifndef SHARDGNN_CLI_SUGGESTIONS_H_
#define SHARDGNN_CLI_SUGGESTIONS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace CLI {
class App;
}  // namespace CLI

namespace shardgnn::cli {

// The name of `names` nearest `word` (edits: insert, delete or replace a
// character, or swap two adjacent ones), the first of the nearest on a tie;
// "" when even it is more than a third of `word`'s length away (at most 3
// edits; none for a word shorter than 3): a suggestion far from what was
// typed misleads.
std::string NearestName(absl::string_view word,
                        const std::vector<std::string>& names);

// After `app` (the main command) refused its arguments: the first one no
// command took, as one sentence: "unknown flag --epoch; did you mean
// --epochs?" (the flags of the subcommand given, and the main command's),
// or "unknown subcommand 'trian'; did you mean 'train'?" (where a subcommand
// was due). "" when no argument was left over that way; the parser's own
// message says then what is wrong.
std::string UnknownArgumentMessage(const CLI::App& app);

}  // namespace shardgnn::cli

#endif  // SHARDGNN_CLI_SUGGESTIONS_H_
