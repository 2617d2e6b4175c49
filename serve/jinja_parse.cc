// Lexing and parsing of the Jinja subset (serve/jinja.h) into the tree of
// serve/jinja_ast.h. Whitespace follows Jinja with trim_blocks and
// lstrip_blocks on, as transformers renders chat templates.
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "serve/jinja_ast.h"

namespace swan::jinja {
namespace {

// ---- Splitting the source into text, {{ expression }} and {% statement %}.

struct Segment {
  enum class Kind { kText, kExpr, kStmt };
  Kind kind;
  std::string text;
  int line;
};

int LineAt(std::string_view s, size_t pos) {
  int line = 1;
  for (size_t i = 0; i < pos && i < s.size(); ++i) line += s[i] == '\n';
  return line;
}

// End of a tag that opened at `from` (just after its opener): the index of
// `closer`, skipping quoted strings.
size_t FindClose(std::string_view src, size_t from, std::string_view closer, bool quotes) {
  char quote = 0;
  for (size_t i = from; i + 1 < src.size() + 1; ++i) {
    const char c = src[i];
    if (quote) {
      if (c == '\\')
        ++i;
      else if (c == quote)
        quote = 0;
      continue;
    }
    if (quotes && (c == '\'' || c == '"')) {
      quote = c;
      continue;
    }
    if (src.substr(i, closer.size()) == closer) return i;
  }
  throw TemplateError("chat template line " + std::to_string(LineAt(src, from)) + ": unclosed tag (no '" +
                      std::string(closer) + "')");
}

std::vector<Segment> Split(std::string_view src) {
  std::vector<Segment> out;
  size_t pos = 0;
  bool strip_next = false;  // the previous tag ended with '-'
  while (pos <= src.size()) {
    size_t start = std::string::npos;
    for (size_t i = pos; i + 1 < src.size(); ++i)
      if (src[i] == '{' && (src[i + 1] == '{' || src[i + 1] == '%' || src[i + 1] == '#')) {
        start = i;
        break;
      }
    std::string text(src.substr(pos, start == std::string::npos ? std::string::npos : start - pos));
    if (strip_next) {
      size_t k = 0;
      while (k < text.size() && std::isspace(static_cast<unsigned char>(text[k]))) ++k;
      text.erase(0, k);
    }
    if (start == std::string::npos) {
      if (!text.empty()) out.push_back({Segment::Kind::kText, text, LineAt(src, pos)});
      break;
    }
    const char type = src[start + 1];
    const char mod = start + 2 < src.size() ? src[start + 2] : 0;
    if (mod == '-') {
      while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    } else if (mod != '+' && type != '{') {
      // lstrip_blocks: spaces and tabs between the line start and a block tag.
      size_t b = start;
      while (b > pos && (src[b - 1] == ' ' || src[b - 1] == '\t')) --b;
      if ((b == 0 || src[b - 1] == '\n') && text.size() >= start - b) text.erase(text.size() - (start - b));
    }
    if (!text.empty()) out.push_back({Segment::Kind::kText, text, LineAt(src, pos)});
    const size_t inner = start + 2 + ((mod == '-' || mod == '+') ? 1 : 0);
    const std::string_view closer = type == '{' ? "}}" : type == '%' ? "%}" : "#}";
    const size_t close = FindClose(src, inner, closer, type != '#');
    size_t inner_end = close;
    const char end_mod = close > inner ? src[close - 1] : 0;
    if (end_mod == '-' || end_mod == '+') --inner_end;
    if (type != '#') {
      out.push_back({type == '{' ? Segment::Kind::kExpr : Segment::Kind::kStmt,
                     std::string(src.substr(inner, inner_end - inner)), LineAt(src, start)});
    }
    pos = close + 2;
    strip_next = end_mod == '-';
    // trim_blocks: the first newline after a block or comment tag.
    if (type != '{' && end_mod != '-' && end_mod != '+' && pos < src.size() && src[pos] == '\n') ++pos;
  }
  return out;
}

// ---- Expression tokens.

struct Token {
  enum class Kind { kName, kNumber, kString, kOp, kEnd };
  Kind kind = Kind::kEnd;
  std::string text;
  Json value;  // kNumber, kString
};

std::vector<Token> Tokenize(const std::string& s, int line) {
  std::vector<Token> out;
  size_t i = 0;
  auto fail = [&](const std::string& what) {
    throw TemplateError("chat template line " + std::to_string(line) + ": " + what + " in '" + s + "'");
  };
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      out.push_back({Token::Kind::kName, s.substr(i, j - i), {}});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      bool is_float = false;
      while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) ||
                              (s[j] == '.' && j + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[j + 1])))))
        is_float |= s[j++] == '.';
      const std::string num = s.substr(i, j - i);
      errno = 0;
      const long long integer = is_float ? 0 : std::strtoll(num.c_str(), nullptr, 10);
      if (errno == ERANGE) fail("the number " + num + " is out of range");
      out.push_back({Token::Kind::kNumber, num, is_float ? Json(std::strtod(num.c_str(), nullptr)) : Json(integer)});
      i = j;
    } else if (c == '\'' || c == '"') {
      std::string value;
      size_t j = i + 1;
      for (; j < s.size() && s[j] != c; ++j) {
        if (s[j] != '\\' || j + 1 >= s.size()) {
          value += s[j];
          continue;
        }
        const char e = s[++j];
        value += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
      }
      if (j >= s.size()) fail("unterminated string");
      out.push_back({Token::Kind::kString, value, Json(value)});
      i = j + 1;
    } else {
      static const char* const kOps[] = {"==", "!=", "<=", ">=", "//", "**", "<", ">", "+", "-", "*", "/", "%",
                                         "~",  "|",  ".",  ",",  ":",  "(",  ")", "[", "]", "{", "}", "="};
      bool found = false;
      for (const char* op : kOps) {
        const size_t n = std::char_traits<char>::length(op);
        if (s.compare(i, n, op) == 0) {
          out.push_back({Token::Kind::kOp, op, {}});
          i += n;
          found = true;
          break;
        }
      }
      if (!found) fail(std::string("unexpected character '") + c + "'");
    }
  }
  out.push_back({Token::Kind::kEnd, "", {}});
  return out;
}

// ---- Expressions: recursive descent, lowest precedence first.

class ExprParser {
 public:
  ExprParser(const std::string& text, int line) : tokens_(Tokenize(text, line)), text_(text), line_(line) {}

  ExprPtr Expression() { return Ternary(); }
  bool AtEnd() const { return Peek().kind == Token::Kind::kEnd; }
  bool IsName(const char* name) const { return Peek().kind == Token::Kind::kName && Peek().text == name; }
  bool IsOp(const char* op) const { return Peek().kind == Token::Kind::kOp && Peek().text == op; }
  const Token& Peek(size_t ahead = 0) const { return tokens_[std::min(at_ + ahead, tokens_.size() - 1)]; }
  Token Next() { return tokens_[std::min(at_++, tokens_.size() - 1)]; }
  void ExpectOp(const char* op) {
    if (!IsOp(op)) Fail(std::string("expected '") + op + "'");
    ++at_;
  }
  std::string ExpectName() {
    if (Peek().kind != Token::Kind::kName) Fail("expected a name");
    return Next().text;
  }
  void ExpectEnd() {
    if (!AtEnd()) Fail("unexpected '" + Peek().text + "'");
  }
  [[noreturn]] void Fail(const std::string& what) const {
    throw TemplateError("chat template line " + std::to_string(line_) + ": " + what + " in '" + text_ + "'");
  }

 private:
  ExprPtr Make(Expr::Kind kind, std::string name = {}) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->name = std::move(name);
    e->line = line_;
    return e;
  }
  ExprPtr Binary(std::string op, ExprPtr a, ExprPtr b) {
    ExprPtr e = Make(Expr::Kind::kBinary, std::move(op));
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  // An expression inside this many others is refused: each level takes a
  // dozen stack frames, and a template of nested brackets (the fuzzer's
  // 1300 '[') would otherwise overflow the stack.
  static constexpr int kMaxNesting = 100;
  int nesting_ = 0;  // expressions being parsed, one inside the other
  struct Nested {
    explicit Nested(ExprParser& p) : parser(p) {
      if (++parser.nesting_ > kMaxNesting)
        parser.Fail("expressions nested more than " + std::to_string(kMaxNesting) + " deep");
    }
    ~Nested() { --parser.nesting_; }
    ExprParser& parser;
  };

  ExprPtr Ternary() {
    const Nested nested(*this);
    ExprPtr value = Or();
    if (!IsName("if")) return value;
    ++at_;
    ExprPtr e = Make(Expr::Kind::kTernary);
    e->args.push_back(std::move(value));
    e->args.push_back(Or());
    if (IsName("else")) {
      ++at_;
      e->args.push_back(Ternary());
    } else {
      e->args.push_back(nullptr);
    }
    return e;
  }
  ExprPtr Or() {
    ExprPtr e = And();
    while (IsName("or")) {
      ++at_;
      e = Binary("or", std::move(e), And());
    }
    return e;
  }
  ExprPtr And() {
    ExprPtr e = Not();
    while (IsName("and")) {
      ++at_;
      e = Binary("and", std::move(e), Not());
    }
    return e;
  }
  ExprPtr Not() {
    if (!IsName("not")) return Compare();
    ++at_;
    const Nested nested(*this);
    ExprPtr e = Make(Expr::Kind::kUnary, "not");
    e->args.push_back(Not());
    return e;
  }
  ExprPtr Compare() {
    ExprPtr e = Concat();
    for (;;) {
      if (IsOp("==") || IsOp("!=") || IsOp("<") || IsOp(">") || IsOp("<=") || IsOp(">=")) {
        const std::string op = Next().text;
        e = Binary(op, std::move(e), Concat());
      } else if (IsName("in")) {
        ++at_;
        e = Binary("in", std::move(e), Concat());
      } else if (IsName("not") && Peek(1).kind == Token::Kind::kName && Peek(1).text == "in") {
        at_ += 2;
        e = Binary("not in", std::move(e), Concat());
      } else if (IsName("is")) {
        ++at_;
        ExprPtr t = Make(Expr::Kind::kTest);
        if (IsName("not")) {
          ++at_;
          t->negated = true;
        }
        // `none`, `true`... are names here.
        t->name = ExpectName();
        t->args.push_back(std::move(e));
        if (IsOp("(")) {
          ++at_;
          Arguments(t.get());
        } else if (Peek().kind == Token::Kind::kString || Peek().kind == Token::Kind::kNumber) {
          t->args.push_back(Primary());  // `is equalto 3`
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }
  ExprPtr Concat() {
    ExprPtr e = Additive();
    while (IsOp("~")) {
      ++at_;
      e = Binary("~", std::move(e), Additive());
    }
    return e;
  }
  ExprPtr Additive() {
    ExprPtr e = Multiplicative();
    while (IsOp("+") || IsOp("-")) {
      const std::string op = Next().text;
      e = Binary(op, std::move(e), Multiplicative());
    }
    return e;
  }
  ExprPtr Multiplicative() {
    ExprPtr e = Unary();
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      const std::string op = Next().text;
      e = Binary(op, std::move(e), Unary());
    }
    return e;
  }
  ExprPtr Unary() {
    if (IsOp("-")) {
      ++at_;
      const Nested nested(*this);
      ExprPtr e = Make(Expr::Kind::kUnary, "-");
      e->args.push_back(Unary());
      return e;
    }
    return Postfix();
  }
  // Arguments after '(' up to and including ')': positional then name=value.
  void Arguments(Expr* call) {
    while (!IsOp(")")) {
      if (Peek().kind == Token::Kind::kName && Peek(1).kind == Token::Kind::kOp && Peek(1).text == "=") {
        std::string name = Next().text;
        ++at_;
        call->kwargs.emplace_back(std::move(name), Expression());
      } else {
        call->args.push_back(Expression());
      }
      if (!IsOp(",")) break;
      ++at_;
    }
    ExpectOp(")");
  }
  ExprPtr Postfix() {
    ExprPtr e = Primary();
    for (;;) {
      if (IsOp(".")) {
        ++at_;
        ExprPtr a = Make(Expr::Kind::kAttr, ExpectName());
        a->args.push_back(std::move(e));
        e = std::move(a);
      } else if (IsOp("[")) {
        ++at_;
        ExprPtr first = IsOp(":") ? nullptr : Expression();
        if (IsOp(":")) {
          ExprPtr s = Make(Expr::Kind::kSlice);
          s->args.push_back(std::move(e));
          s->args.push_back(std::move(first));
          for (int part = 0; part < 2; ++part) {
            if (IsOp(":")) {
              ++at_;
              s->args.push_back(IsOp(":") || IsOp("]") ? nullptr : Expression());
            } else {
              s->args.push_back(nullptr);
            }
          }
          e = std::move(s);
        } else {
          ExprPtr x = Make(Expr::Kind::kIndex);
          x->args.push_back(std::move(e));
          x->args.push_back(std::move(first));
          e = std::move(x);
        }
        ExpectOp("]");
      } else if (IsOp("(")) {
        ++at_;
        ExprPtr c = Make(Expr::Kind::kCall);
        c->args.push_back(std::move(e));
        Arguments(c.get());
        e = std::move(c);
      } else if (IsOp("|")) {
        ++at_;
        ExprPtr f = Make(Expr::Kind::kFilter, ExpectName());
        f->args.push_back(std::move(e));
        if (IsOp("(")) {
          ++at_;
          Arguments(f.get());
        }
        e = std::move(f);
      } else {
        return e;
      }
    }
  }
  ExprPtr Primary() {
    const Token t = Next();
    if (t.kind == Token::Kind::kNumber || t.kind == Token::Kind::kString) {
      ExprPtr e = Make(Expr::Kind::kLiteral);
      e->literal = t.value;
      // Adjacent string literals concatenate ("a" "b").
      while (t.kind == Token::Kind::kString && Peek().kind == Token::Kind::kString)
        e->literal = e->literal.get<std::string>() + Next().text;
      return e;
    }
    if (t.kind == Token::Kind::kName) {
      ExprPtr e = Make(Expr::Kind::kLiteral);
      if (t.text == "true" || t.text == "True")
        e->literal = true;
      else if (t.text == "false" || t.text == "False")
        e->literal = false;
      else if (t.text == "none" || t.text == "None")
        e->literal = nullptr;
      else
        e = Make(Expr::Kind::kName, t.text);
      return e;
    }
    if (t.kind == Token::Kind::kOp && t.text == "(") {
      ExprPtr e = Expression();
      if (IsOp(",")) {  // a tuple: treated as a list
        ExprPtr list = Make(Expr::Kind::kList);
        list->args.push_back(std::move(e));
        while (IsOp(",")) {
          ++at_;
          if (IsOp(")")) break;
          list->args.push_back(Expression());
        }
        e = std::move(list);
      }
      ExpectOp(")");
      return e;
    }
    if (t.kind == Token::Kind::kOp && t.text == "[") {
      ExprPtr e = Make(Expr::Kind::kList);
      while (!IsOp("]")) {
        e->args.push_back(Expression());
        if (!IsOp(",")) break;
        ++at_;
      }
      ExpectOp("]");
      return e;
    }
    if (t.kind == Token::Kind::kOp && t.text == "{") {
      ExprPtr e = Make(Expr::Kind::kDict);
      while (!IsOp("}")) {
        e->args.push_back(Expression());
        ExpectOp(":");
        e->args.push_back(Expression());
        if (!IsOp(",")) break;
        ++at_;
      }
      ExpectOp("}");
      return e;
    }
    Fail(t.kind == Token::Kind::kEnd ? "unexpected end of expression" : "unexpected '" + t.text + "'");
  }

  std::vector<Token> tokens_;
  size_t at_ = 0;
  std::string text_;
  int line_;
};

// ---- Statements.

class Parser {
 public:
  explicit Parser(std::vector<Segment> segments) : segments_(std::move(segments)) {}

  // Parses nodes until a statement whose first word is in `stops` (left
  // unconsumed; its word is returned) or the end ("" returned).
  std::string ParseBody(Body* body, std::initializer_list<const char*> stops) {
    while (at_ < segments_.size()) {
      const Segment& seg = segments_[at_];
      if (seg.kind == Segment::Kind::kText) {
        Node n;
        n.kind = Node::Kind::kText;
        n.text = seg.text;
        n.line = seg.line;
        body->push_back(std::move(n));
        ++at_;
        continue;
      }
      ExprParser p(seg.text, seg.line);
      if (seg.kind == Segment::Kind::kExpr) {
        Node n;
        n.kind = Node::Kind::kOutput;
        n.line = seg.line;
        n.expr = p.Expression();
        p.ExpectEnd();
        body->push_back(std::move(n));
        ++at_;
        continue;
      }
      const std::string word = p.AtEnd() ? "" : p.Peek().text;
      for (const char* stop : stops)
        if (word == stop) return word;
      ++at_;
      p.Next();
      // blocks recurse as expressions do (ExprParser::kMaxNesting)
      if ((word == "if" || word == "for") && blocks_open_ >= kMaxBlockNesting)
        p.Fail("blocks nested more than " + std::to_string(kMaxBlockNesting) + " deep");
      const BlockOpen open(word == "if" || word == "for" ? &blocks_open_ : nullptr);
      if (word == "if") {
        body->push_back(ParseIf(p, seg.line));
      } else if (word == "for") {
        body->push_back(ParseFor(p, seg.line));
      } else if (word == "set") {
        body->push_back(ParseSet(p, seg.line));
      } else if (word == "generation" || word == "endgeneration") {
        p.ExpectEnd();  // training-only markers: no output
      } else {
        p.Fail(word.empty() ? "empty statement" : "unsupported statement '" + word + "'");
      }
    }
    return "";
  }

 private:
  static constexpr int kMaxBlockNesting = 100;
  int blocks_open_ = 0;  // if and for blocks being parsed, one inside the other
  struct BlockOpen {     // counts one open block while it lives
    explicit BlockOpen(int* count) : count(count) {
      if (count) ++*count;
    }
    ~BlockOpen() {
      if (count) --*count;
    }
    int* count;
  };

  // The statement that closes a block; fails if the template ends first.
  ExprParser Closing(const std::string& word, const char* block, int line) {
    if (word.empty())
      throw TemplateError("chat template line " + std::to_string(line) + ": '" + block + "' is never closed");
    const Segment& seg = segments_[at_++];
    ExprParser p(seg.text, seg.line);
    p.Next();
    return p;
  }

  Node ParseIf(ExprParser& p, int line) {
    Node n;
    n.kind = Node::Kind::kIf;
    n.line = line;
    ExprPtr cond = p.Expression();
    p.ExpectEnd();
    for (;;) {
      Body body;
      const std::string word = ParseBody(&body, {"elif", "else", "endif"});
      n.branches.emplace_back(std::move(cond), std::move(body));
      ExprParser q = Closing(word, "if", line);
      if (word == "endif") {
        q.ExpectEnd();
        return n;
      }
      if (word == "elif") {
        cond = q.Expression();
      } else {
        cond = nullptr;
        if (n.branches.back().first == nullptr) q.Fail("'else' after 'else'");
      }
      q.ExpectEnd();
    }
  }

  Node ParseFor(ExprParser& p, int line) {
    Node n;
    n.kind = Node::Kind::kFor;
    n.line = line;
    n.vars.push_back(p.ExpectName());
    while (p.IsOp(",")) {
      p.Next();
      n.vars.push_back(p.ExpectName());
    }
    if (!p.IsName("in")) p.Fail("expected 'in'");
    p.Next();
    // The iterable stops before a trailing `if` filter, so parse below the ternary.
    n.expr = p.Expression();
    if (n.expr->kind == Expr::Kind::kTernary && n.expr->args[2] == nullptr) {
      n.filter = std::move(n.expr->args[1]);
      n.expr = std::move(n.expr->args[0]);
    }
    if (p.IsName("recursive")) p.Fail("recursive loops are not supported");
    p.ExpectEnd();
    const std::string word = ParseBody(&n.body, {"else", "endfor"});
    ExprParser q = Closing(word, "for", line);
    q.ExpectEnd();
    if (word == "else") {
      const std::string end = ParseBody(&n.else_body, {"endfor"});
      Closing(end, "for", line).ExpectEnd();
    }
    return n;
  }

  Node ParseSet(ExprParser& p, int line) {
    Node n;
    n.kind = Node::Kind::kSet;
    n.line = line;
    n.target = p.ExpectName();
    if (p.IsOp(".")) {
      p.Next();
      n.target_attr = p.ExpectName();
    }
    if (!p.IsOp("=")) p.Fail("only `set name = value` is supported");
    p.Next();
    n.expr = p.Expression();
    p.ExpectEnd();
    return n;
  }

  std::vector<Segment> segments_;
  size_t at_ = 0;
};

}  // namespace

Program Parse(std::string_view source) {
  Parser parser(Split(source));
  Program program;
  const std::string stray = parser.ParseBody(&program.body, {"elif", "else", "endif", "endfor"});
  if (!stray.empty()) throw TemplateError("chat template: '" + stray + "' without its opening statement");
  return program;
}

}  // namespace swan::jinja
