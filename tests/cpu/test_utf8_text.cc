// Generated text as valid UTF-8 (core/utf8_text.h): new-user trial, `dak generate -p "héllo 🙂 世界" -n 5 |
// iconv -f UTF-8 -t UTF-8` failed because stdout ended inside a multi-byte character.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/pretokenizer.h"
#include "core/utf8_text.h"

namespace dak {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8Text, ValidTextIsUnchangedAndIllFormedPartsBecomeReplacementCharacters) {
  for (const std::string s : {std::string(""), std::string("plain"), std::string("h\xC3\xA9llo \xF0\x9F\x99\x82 "
                                                                                  "\xE4\xB8\x96\xE7\x95\x8C")}) {
    EXPECT_EQ(valid_utf8(s), s);
  }
  // An unfinished character at the end: one U+FFFD for its bytes.
  EXPECT_EQ(valid_utf8("ab\xE4\xB8"), "ab" + kFffd);
  EXPECT_EQ(valid_utf8("\xF0\x9F\x99"), kFffd);
  // Lone continuation bytes and bytes that never start a character: one each.
  EXPECT_EQ(valid_utf8("\x80\x80x"), kFffd + kFffd + "x");
  EXPECT_EQ(valid_utf8("\xFF\xC0\xC1"), kFffd + kFffd + kFffd);
  // A sequence cut by a byte that cannot continue it: the cut part, then the byte on its own.
  EXPECT_EQ(valid_utf8("\xE4\xB8" "a"), kFffd + "a");
  // Overlongs and surrogates are ill-formed from their second byte on.
  EXPECT_EQ(valid_utf8("\xE0\x80\x80"), kFffd + kFffd + kFffd);
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);
  for (const std::string s : {std::string("\xE4\xB8"), std::string("\x80\xFF\xF4\x90"), std::string("a\xC3")}) {
    EXPECT_FALSE(find_invalid_utf8(valid_utf8(s)).has_value()) << s;
  }
}

TEST(Utf8Text, UnfinishedTailIsOnlyACharacterMoreBytesCanComplete) {
  EXPECT_EQ(unfinished_utf8_tail(""), 0u);
  EXPECT_EQ(unfinished_utf8_tail("abc"), 3u);
  EXPECT_EQ(unfinished_utf8_tail("ab\xE4\xB8"), 2u);
  EXPECT_EQ(unfinished_utf8_tail("ab\xE4"), 2u);
  EXPECT_EQ(unfinished_utf8_tail("a\xF0\x9F\x99"), 1u);
  EXPECT_EQ(unfinished_utf8_tail("a\xF0\x9F\x99\x82"), 5u);  // complete
  EXPECT_EQ(unfinished_utf8_tail("a\x80"), 2u);                // a lone continuation byte: nothing to wait for
  EXPECT_EQ(unfinished_utf8_tail("a\xE0\x80"), 3u);            // an overlong: ill-formed already
}

TEST(Utf8Text, StreamHoldsBackAnUnfinishedCharacterAndEndsItAsReplacement) {
  // The bytes of "界" (E7 95 8C) arriving one token at a time, then a generation stopping inside "世".
  Utf8Stream out;
  std::string printed;
  const std::vector<std::string> decoded = {"ok ", "ok \xE7", "ok \xE7\x95", "ok \xE7\x95\x8C", "ok \xE7\x95\x8C\xE4",
                                            "ok \xE7\x95\x8C\xE4\xB8"};
  const std::vector<std::string> want = {"ok ", "", "", "\xE7\x95\x8C", "", ""};
  for (size_t i = 0; i < decoded.size(); ++i) {
    const std::string fresh = out.next(decoded[i]);
    EXPECT_EQ(fresh, want[i]) << "step " << i;
    printed += fresh;
  }
  printed += out.finish(decoded.back());
  EXPECT_EQ(printed, "ok \xE7\x95\x8C" + kFffd);
  EXPECT_FALSE(find_invalid_utf8(printed).has_value());
  // Ill-formed bytes inside the text come out as U+FFFD as they stream.
  Utf8Stream bad;
  EXPECT_EQ(bad.next("a\x80"), "a" + kFffd);
  EXPECT_EQ(bad.next("a\x80" "b"), "b");
  EXPECT_EQ(bad.finish("a\x80" "b"), "");
}

}  // namespace
}  // namespace dak
