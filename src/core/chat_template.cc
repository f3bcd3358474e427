// Tokenizer::apply_chat_template: the four common chat template families rendered in C++
// (dak has no Jinja engine). The family is detected from the template text:
//   ChatML  ("<|im_start|>"):        <|im_start|>{role}\n{content}<|im_end|>\n ... and
//           "<|im_start|>assistant\n" as generation prompt. When the template holds a
//           default system message (a string literal "<|im_start|>system\n...<|im_end|>",
//           e.g. SmolLM2, Qwen2.5) it is emitted when the first message is not a system one.
//   Llama-3 ("<|start_header_id|>"): {bos}<|start_header_id|>{role}<|end_header_id|>\n\n
//           {content|trim}<|eot_id|> ... and "<|start_header_id|>assistant<|end_header_id|>\n\n".
//           Llama 3.1 / 3.2 templates ("Cutting Knowledge Date: "): the first block is always the
//           system one, "Cutting Knowledge Date: {date}\nToday Date: {today}\n\n" then the system
//           message (trimmed; empty without one), where {date} is the template's literal and
//           {today} today's date as "%d %b %Y" when the template calls strftime_now (3.2; HF
//           defines it), else its date_string literal ("26 Jul 2024" in 3.1).
//   Llama-2 ("[INST]" with "<<SYS>>"): per user turn {bos}[INST] {content.strip()} [/INST],
//           the first one prefixed by "<<SYS>>\n{system}\n<</SYS>>\n\n"; per assistant turn
//           " {content.strip()} {eos}". Roles must alternate user/assistant.
//   Mistral ("[INST]" without "<<SYS>>"): one user turn, {bos}[INST] {user} [/INST] (v0.1 / v0.2;
//           a system message is refused, as their templates raise), or, where the template
//           defines system_message (v0.3 and later), {bos}[INST] {system}\n\n{user}[/INST].
// The rendered text contains the BOS token's text where the template writes bos_token, so
// encode it with allow_bos = false (transformers tokenizes chat text without adding
// special tokens).
#include <algorithm>
#include <ctime>

#include "core/error.h"
#include "core/tokenizer.h"

namespace dak {

namespace {

// Where a model without a template would have one.
constexpr const char* kTemplateWhere = "chat template (tokenizer.chat_template / tokenizer_config.json)";
constexpr const char* kDropChat = "drop --chat and pass the prompt text as is (or as ids with --prompt-ids)";

// Jinja / Python string-literal escapes used in chat templates.
std::string unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    switch (c) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      default: out += c; break;  // \\, \', \"
    }
  }
  return out;
}

// The default system message of a ChatML template: the first string literal that starts
// with "<|im_start|>system\n" and holds a whole message up to "<|im_end|>".
std::optional<std::string> chatml_default_system(std::string_view tmpl) {
  constexpr std::string_view kMarker = "<|im_start|>system";
  constexpr std::string_view kHead = "<|im_start|>system\n";
  for (size_t pos = tmpl.find(kMarker); pos != std::string_view::npos; pos = tmpl.find(kMarker, pos + 1)) {
    if (pos == 0) continue;
    const char quote = tmpl[pos - 1];
    if (quote != '\'' && quote != '"') continue;
    size_t end = pos;
    while (end < tmpl.size() && tmpl[end] != quote) end += (tmpl[end] == '\\') ? 2 : 1;
    if (end >= tmpl.size()) continue;
    const std::string literal = unescape(tmpl.substr(pos, end - pos));
    const size_t close = literal.find("<|im_end|>");
    if (literal.compare(0, kHead.size(), kHead) == 0 && close != std::string::npos) {
      return literal.substr(kHead.size(), close - kHead.size());
    }
  }
  return std::nullopt;
}

// Why dak cannot render `tmpl`: which of the markers of the families it renders the template lacks.
std::string unsupported_cause(std::string_view) {
  return "it has none of the markers of the templates dak renders: <|im_start|> (ChatML), <|start_header_id|> "
         "(Llama-3), [INST] (Llama-2 with <<SYS>>, else Mistral)";
}

/// The text of a template string literal from `from` up to its end: a quote, or an escaped or real
/// newline.
std::string literal_run(std::string_view tmpl, size_t from) {
  size_t end = from;
  while (end < tmpl.size() && tmpl[end] != '\\' && tmpl[end] != '\n' && tmpl[end] != '"' && tmpl[end] != '\'')
    ++end;
  return std::string(tmpl.substr(from, end - from));
}

/// Llama 3.1 / 3.2's "Today Date": today (local time, "%d %b %Y") where the template calls
/// strftime_now, else its `date_string = "..."` default, else 3.1's "26 Jul 2024".
std::string llama31_today(std::string_view tmpl) {
  if (tmpl.find("strftime_now") != std::string_view::npos) {
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char buf[32];
    if (std::strftime(buf, sizeof(buf), "%d %b %Y", &local) > 0) return buf;
  }
  for (std::string_view key : {"date_string = \"", "date_string = '", "date_string=\"", "date_string='"}) {
    if (const size_t at = tmpl.find(key); at != std::string_view::npos) {
      const std::string d = literal_run(tmpl, at + key.size());
      if (!d.empty()) return d;
    }
  }
  return "26 Jul 2024";
}

std::string strip(std::string_view s) {
  constexpr std::string_view kSpace = " \t\n\r\v\f";
  const size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  return std::string(s.substr(b, s.find_last_not_of(kSpace) - b + 1));
}

}  // namespace

std::string Tokenizer::apply_chat_template(std::span<const ChatMessage> messages, bool add_generation_prompt) const {
  if (!chat_template_ || chat_template_->empty()) {
    fail("the model has no chat template", kTemplateWhere, kDropChat);
  }
  const std::string& tmpl = *chat_template_;
  const std::string where = chat_template_source_.empty() ? kTemplateWhere : chat_template_source_;
  std::string out;

  if (tmpl.find("<|im_start|>") != std::string::npos) {
    const auto default_system = chatml_default_system(tmpl);
    if (!messages.empty() && messages[0].role != "system" && default_system) {
      out += "<|im_start|>system\n" + *default_system + "<|im_end|>\n";
    }
    for (const ChatMessage& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    if (add_generation_prompt) out += "<|im_start|>assistant\n";
    return out;
  }

  const std::string bos = bos_id_ >= 0 ? decode(std::span<const int32_t>(&bos_id_, 1)) : std::string();

  if (tmpl.find("<|start_header_id|>") != std::string::npos) {
    constexpr std::string_view kKnowledge = "Cutting Knowledge Date: ";
    size_t first = 0;
    if (const size_t kd = tmpl.find(kKnowledge); kd != std::string::npos) {  // Llama 3.1 / 3.2: the system block
      const bool has_system = !messages.empty() && messages[0].role == "system";
      out += bos + "<|start_header_id|>system<|end_header_id|>\n\n" + std::string(kKnowledge) +
             literal_run(tmpl, kd + kKnowledge.size()) + "\nToday Date: " + llama31_today(tmpl) + "\n\n" +
             (has_system ? strip(messages[0].content) : std::string()) + "<|eot_id|>";
      first = has_system ? 1 : 0;
    }
    for (size_t i = first; i < messages.size(); ++i) {
      if (out.empty()) out += bos;
      out += "<|start_header_id|>" + messages[i].role + "<|end_header_id|>\n\n" + strip(messages[i].content) +
             "<|eot_id|>";
    }
    if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    return out;
  }

  if (tmpl.find("[INST]") != std::string::npos && tmpl.find("<<SYS>>") != std::string::npos) {
    // The eos_token of the template: the model's EOS, not an added end-of-turn token.
    std::string eos;
    for (int32_t id : eos_ids_) {
      std::string text = decode(std::span<const int32_t>(&id, 1));
      if (text != "<|im_end|>" && text != "<|eot_id|>") {
        eos = std::move(text);
        break;
      }
    }
    std::optional<std::string> system;
    size_t first = 0;
    if (!messages.empty() && messages[0].role == "system") {
      system = messages[0].content;
      first = 1;
    }
    for (size_t i = first; i < messages.size(); ++i) {
      const size_t k = i - first;
      const ChatMessage& m = messages[i];
      if ((m.role == "user") != (k % 2 == 0)) {
        fail("conversation roles must alternate user/assistant/user/... (message " + std::to_string(i) + " is '" +
                 m.role + "')",
             where, "give the messages in alternating order, or drop --chat");
      }
      std::string content = (k == 0 && system) ? "<<SYS>>\n" + *system + "\n<</SYS>>\n\n" + m.content : m.content;
      if (m.role == "user") {
        out += bos + "[INST] " + strip(content) + " [/INST]";
      } else if (m.role == "assistant") {
        out += ' ';
        out += strip(content);
        out += ' ';
        out += eos;
      }
    }
    return out;
  }

  if (tmpl.find("[INST]") != std::string::npos) {
    // Mistral instruct. v0.3 and later (the system message defined by the template): "[INST] " +
    // (system + "\n\n" on the last user turn) + user + "[/INST]"; v0.1 / v0.2 (' [/INST]' with its
    // space, no system role): "[INST] " + user + " [/INST]". bos once, first. The forms of the
    // assistant turns differ between releases (a space, a trim, or none), so dak renders the one
    // turn `dak generate --chat` sends: an optional system message and one user message.
    const bool v3 = tmpl.find("system_message") != std::string::npos;
    const bool has_system = !messages.empty() && messages[0].role == "system";
    const size_t first = has_system ? 1 : 0;
    if (messages.size() != first + 1 || messages[first].role != "user")
      fail("dak renders Mistral chat templates for one user message (with an optional system message) only",
           where, "give one prompt per sequence, or drop --chat and pass the formatted conversation");
    if (has_system && !v3)
      fail("this chat template takes no system message (Mistral v0.1 / v0.2: only user and assistant roles)", where,
           "drop --system, or put the instruction into the prompt");
    out += bos + "[INST] ";
    if (has_system) out += messages[0].content + "\n\n";
    out += messages[first].content + (v3 ? "[/INST]" : " [/INST]");
    return out;
  }

  fail("dak cannot render this chat template (it renders ChatML, Llama-2, Llama-3 and Mistral templates, having "
       "no Jinja engine): " + unsupported_cause(tmpl),
       where, kDropChat);
}

}  // namespace dak
