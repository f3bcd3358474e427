// Chat templates rendered by Tokenizer::apply_chat_template. Each expected string is what
// the Jinja template given next to it renders for the messages (worked out by reading the
// template; the comments show how).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <ctime>
#include <string>
#include <vector>

#include "core/bpe_tokenizer.h"
#include "core/error.h"
#include "core/pretokenizer.h"
#include "core/tokenizer.h"

namespace dak {
namespace {

// A byte-level tokenizer with no merges whose only purpose is to carry the special tokens
// and the template: ids 0..255 are the byte alphabet, specials follow.
std::unique_ptr<Tokenizer> make_tokenizer(const std::string& tmpl, const std::vector<std::string>& specials,
                                          const std::string& bos, const std::string& eos) {
  nlohmann::json vocab = nlohmann::json::object();
  const auto& alpha = byte_level_alphabet();
  for (int b = 0; b < 256; ++b) vocab[alpha[b]] = b;
  nlohmann::json added = nlohmann::json::array();
  for (size_t i = 0; i < specials.size(); ++i) {
    const int id = 256 + static_cast<int>(i);
    vocab[specials[i]] = id;
    added.push_back({{"id", id}, {"content", specials[i]}, {"special", true}});
  }
  nlohmann::json j = {
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}},
      {"added_tokens", added},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
  };
  HfTokenizerConfig cfg;
  cfg.chat_template = tmpl;
  if (!bos.empty()) cfg.bos_token = bos;
  if (!eos.empty()) cfg.eos_token = eos;
  return parse_hf_tokenizer_json(j.dump(), "synthetic tokenizer.json", cfg);
}

const std::vector<ChatMessage> kSysUser = {{"system", "Be brief."}, {"user", "Hi"}};
const std::vector<ChatMessage> kUser = {{"user", "Hi"}};

// SmolLM2-Instruct's template (its tokenizer_config.json), whose default system message
// lives in a string literal with real newlines.
const char* kSmolTemplate =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

TEST(ChatTemplate, ChatMlWithDefaultSystemMessage) {
  auto tok = make_tokenizer(kSmolTemplate, {"<|im_start|>", "<|im_end|>"}, "", "<|im_end|>");
  // First message is not a system one -> the literal system block, then each message.
  EXPECT_EQ(tok->apply_chat_template(kUser),
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  // An empty system message is one (dak generate --system ""): it replaces the default.
  EXPECT_EQ(tok->apply_chat_template(std::vector<ChatMessage>{{"system", ""}, {"user", "Hi"}}),
            "<|im_start|>system\n<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  // A given system message replaces the default; no generation prompt when not asked.
  EXPECT_EQ(tok->apply_chat_template(kSysUser, /*add_generation_prompt=*/false),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplate, ChatMlDefaultSystemWithEscapedNewlines) {
  // Qwen2.5-style: escaped "\n" inside the literals, and a tools branch whose
  // '<|im_start|>system\n' literal holds no whole message (it must be skipped).
  const std::string tmpl = R"({%- if tools %}{{- '<|im_start|>system\n' }}{%- if messages[0]['role'] == 'system' %})"
                           R"({{- messages[0]['content'] }}{%- endif %}{%- else %}{%- if messages[0]['role'] == 'system' %})"
                           R"({{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}{%- else %})"
                           R"({{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }})"
                           R"({%- endif %}{%- endif %}{%- for message in messages %}{%- if not (message.role == "system" and loop.first) %})"
                           R"({{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}{%- endif %})"
                           R"({%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %})";
  auto tok = make_tokenizer(tmpl, {"<|im_start|>", "<|im_end|>"}, "", "<|im_end|>");
  EXPECT_EQ(tok->apply_chat_template(kUser),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, ChatMlWithoutDefaultSystemMessage) {
  const std::string tmpl =
      R"({% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %})"
      R"({% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %})";
  auto tok = make_tokenizer(tmpl, {"<|im_start|>", "<|im_end|>"}, "", "<|im_end|>");
  EXPECT_EQ(tok->apply_chat_template(kUser), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_TRUE(tok->is_eos(257));  // <|im_end|>
}

TEST(ChatTemplate, Llama3) {
  // Meta-Llama-3-8B-Instruct: bos_token before the first message; per message
  // '<|start_header_id|>' + role + '<|end_header_id|>\n\n' + (content | trim) + '<|eot_id|>'.
  const std::string tmpl =
      R"({% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %})"
      R"({% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %})"
      R"({% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %})";
  auto tok = make_tokenizer(tmpl, {"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                                   "<|end_header_id|>", "<|eot_id|>"},
                            "<|begin_of_text|>", "<|end_of_text|>");
  const std::vector<ChatMessage> msgs = {{"system", "Be brief."}, {"user", "  Hi\n"}};
  EXPECT_EQ(tok->apply_chat_template(msgs),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_TRUE(tok->is_eos(256 + 4));  // <|eot_id|> ends a turn
  EXPECT_TRUE(tok->is_eos(256 + 1));  // <|end_of_text|>
}

// A template in the shape of Llama 3.1's (its system block, date_string default and message loop;
// tools left out). The expected strings are what transformers 5.17's Jinja environment
// (chat_template_utils._compile_jinja_template) rendered for it, with bos_token given.
const char* kLlama31Template =
    R"({{- bos_token }}{%- if not date_string is defined %}{%- set date_string = "26 Jul 2024" %}{%- endif %})"
    R"({%- if messages[0]['role'] == 'system' %}{%- set system_message = messages[0]['content']|trim %})"
    R"({%- set messages = messages[1:] %}{%- else %}{%- set system_message = "" %}{%- endif %})"
    R"({{- "<|start_header_id|>system<|end_header_id|>\n\n" }}{{- "Cutting Knowledge Date: December 2023\n" }})"
    R"({{- "Today Date: " + date_string + "\n\n" }}{{- system_message }}{{- "<|eot_id|>" }})"
    R"({%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}{%- endfor %})"
    R"({%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{%- endif %})";

TEST(ChatTemplate, Llama31SystemBlockWithDates) {
  const std::vector<std::string> specials = {"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                                             "<|end_header_id|>", "<|eot_id|>"};
  auto tok = make_tokenizer(kLlama31Template, specials, "<|begin_of_text|>", "<|eot_id|>");
  const std::vector<ChatMessage> msgs = {{"system", " Be brief.\n"}, {"user", "  Hi\n"}};
  const std::string head = "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: "
                           "December 2023\nToday Date: ";
  const std::string tail = "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                           "<|start_header_id|>assistant<|end_header_id|>\n\n";
  EXPECT_EQ(tok->apply_chat_template(msgs), head + "26 Jul 2024\n\nBe brief.<|eot_id|>" + tail);
  // Without a system message the block is still there, empty.
  EXPECT_EQ(tok->apply_chat_template(kUser), head + "26 Jul 2024\n\n<|eot_id|>" + tail);
  // The default written without spaces around '=' (trial 28b).
  std::string tight = kLlama31Template;
  const std::string spaced = R"(set date_string = "26 Jul 2024")";
  tight.replace(tight.find(spaced), spaced.size(), R"(set date_string="01 Jan 2025")");
  EXPECT_EQ(make_tokenizer(tight, specials, "<|begin_of_text|>", "<|eot_id|>")->apply_chat_template(kUser),
            head + "01 Jan 2025\n\n<|eot_id|>" + tail);
  // Llama 3.2 sets date_string from strftime_now("%d %b %Y") where it is defined, as transformers
  // defines it: today's date.
  std::string t32 = kLlama31Template;
  const std::string plain = R"({%- set date_string = "26 Jul 2024" %})";
  t32.replace(t32.find(plain), plain.size(),
              R"({%- if strftime_now is defined %}{%- set date_string = strftime_now("%d %b %Y") %})"
              R"({%- else %}{%- set date_string = "26 Jul 2024" %}{%- endif %})");
  auto tok32 = make_tokenizer(t32, specials, "<|begin_of_text|>", "<|eot_id|>");
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char today[32];
  ASSERT_GT(std::strftime(today, sizeof(today), "%d %b %Y", &local), 0u);
  const std::string got = tok32->apply_chat_template(kUser);
  // A render that crosses midnight is the only way the dates can differ: accept either day then.
  if (got != head + today + "\n\n<|eot_id|>" + tail) {
    const std::time_t later = std::time(nullptr);
    localtime_r(&later, &local);
    ASSERT_GT(std::strftime(today, sizeof(today), "%d %b %Y", &local), 0u);
  }
  EXPECT_EQ(got, head + today + "\n\n<|eot_id|>" + tail);
  EXPECT_EQ(std::string(today).size(), 11u) << today;  // "05 Dec 2026"
}

// Llama-2-chat (meta-llama/Llama-2-7b-chat-hf tokenizer_config.json).
const char* kLlama2Template =
    R"({% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %})"
    R"({% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %})"
    R"({% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %})"
    R"({% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %})"
    R"({% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }})"
    R"({% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %})";

TEST(ChatTemplate, Llama2) {
  auto tok = make_tokenizer(kLlama2Template, {"<s>", "</s>"}, "<s>", "</s>");
  const std::vector<ChatMessage> msgs = {
      {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello! "}, {"user", "How are you?"}};
  // user 0: bos + '[INST] ' + strip('<<SYS>>\n' + sys + '\n<</SYS>>\n\n' + 'Hi') + ' [/INST]';
  // assistant: ' ' + strip(content) + ' ' + eos; user 2: bos + '[INST] How are you? [/INST]'.
  EXPECT_EQ(tok->apply_chat_template(msgs),
            "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello! </s><s>[INST] How are you? [/INST]");
  EXPECT_EQ(tok->apply_chat_template(kUser), "<s>[INST] Hi [/INST]");
}

// Templates in the shapes of Mistral-7B-Instruct v0.1 (no system role, ' [/INST]') and v0.3 (the
// system message on the last user turn, '[/INST]'). Expected strings: transformers 5.17's Jinja
// rendering of these templates (a system message makes v0.1's raise).
const char* kMistralV1Template =
    R"({{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %})"
    R"({{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %})"
    R"({% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }})"
    R"({% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %})"
    R"({{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %})";
const char* kMistralV3Template =
    R"({%- if messages[0]["role"] == "system" %}{%- set system_message = messages[0]["content"] %})"
    R"({%- set loop_messages = messages[1:] %}{%- else %}{%- set loop_messages = messages %}{%- endif %})"
    R"({{- bos_token }}{%- for message in loop_messages %}{%- if message["role"] == "user" %})"
    R"({%- if loop.last and system_message is defined %}{{- "[INST] " + system_message + "\n\n" + message["content"] + "[/INST]" }})"
    R"({%- else %}{{- "[INST] " + message["content"] + "[/INST]" }}{%- endif %})"
    R"({%- elif message["role"] == "assistant" %}{{- " " + message["content"] + eos_token }}{%- endif %}{%- endfor %})";

TEST(ChatTemplate, MistralOneTurn) {
  auto v1 = make_tokenizer(kMistralV1Template, {"<s>", "</s>", "[INST]", "[/INST]"}, "<s>", "</s>");
  EXPECT_EQ(v1->apply_chat_template(kUser), "<s>[INST] Hi [/INST]");
  EXPECT_THROW(v1->apply_chat_template(kSysUser), Error);  // the template raises on a system message
  auto v3 = make_tokenizer(kMistralV3Template, {"<s>", "</s>", "[INST]", "[/INST]"}, "<s>", "</s>");
  EXPECT_EQ(v3->apply_chat_template(kUser), "<s>[INST] Hi[/INST]");
  EXPECT_EQ(v3->apply_chat_template(kSysUser), "<s>[INST] Be brief.\n\nHi[/INST]");
  // Conversations of several turns are refused (their assistant turns differ between releases).
  const std::vector<ChatMessage> turns = {{"user", "a"}, {"assistant", "b"}, {"user", "c"}};
  try {
    v3->apply_chat_template(turns);
    ADD_FAILURE() << "not refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("one user message"), std::string::npos) << e.what();
  }
}

TEST(ChatTemplate, Llama2RolesMustAlternate) {
  auto tok = make_tokenizer(kLlama2Template, {"<s>", "</s>"}, "<s>", "</s>");
  const std::vector<ChatMessage> msgs = {{"user", "a"}, {"user", "b"}};
  EXPECT_THROW(tok->apply_chat_template(msgs), Error);
}

TEST(ChatTemplate, UnknownOrMissingTemplateSaysDropChat) {
  auto unknown = make_tokenizer("{% for m in messages %}{{ '### ' + m['role'] + ': ' + m['content'] }}{% endfor %}", {},
                                "", "");
  auto none = make_tokenizer("", {}, "", "");
  for (const auto* tok : {unknown.get(), none.get()}) {
    try {
      tok->apply_chat_template(kUser);
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(e.fix_part().find("--chat"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace dak
