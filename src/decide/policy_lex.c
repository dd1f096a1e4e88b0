/* The policy language's lexer: one line's tokens, the error messages
 * (with a suggestion for a misspelt word), and tokens' values. */
#include "decide/policy_lex.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Tokens --------------------------------------------------------------- */

static int
amp_is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

static int
amp_is_op_char(char c)
{
    return c == '<' || c == '>' || c == '=' || c == '!' || c == '%';
}

/* Word bytes: anything but space, quotes, parentheses, comments and the
 * comparison operators' first bytes ('!' inside a glob is fine). */
static int
amp_is_word_char(char c)
{
    return c != '\0' && !amp_is_space(c) && c != '"' && c != '(' &&
           c != ')' && c != '#' && c != '<' && c != '>' && c != '=' &&
           c != '%';
}

void
amp_fail(struct amp_parser *ps, int col, const char *fmt, ...)
{
    va_list ap;

    if (ps->failed)
        return;
    ps->failed = 1;
    ps->err->line = ps->lineno;
    ps->err->col = col;
    va_start(ap, fmt);
    vsnprintf(ps->err->message, sizeof ps->err->message, fmt, ap);
    va_end(ap);
}

/* How the current token reads in a message: 'word', or end of line. */
static const char *
amp_tok_desc(const struct amp_tok *t, char *buf, size_t cap)
{
    if (t->kind == AMP_TOK_END)
        return "end of line";
    snprintf(buf, cap, "'%.*s'", (int)(t->len > 40 ? 40 : t->len), t->at);
    return buf;
}

/* "expected WHAT, found TOKEN" at the current token. */
void
amp_expected(struct amp_parser *ps, const char *what)
{
    char buf[64];

    amp_fail(ps, ps->tok.col, "expected %s, found %s", what,
             amp_tok_desc(&ps->tok, buf, sizeof buf));
}

void
amp_next(struct amp_parser *ps)
{
    struct amp_tok *t = &ps->tok;
    const char *l = ps->line;
    size_t n = ps->line_len, start;

    while (ps->pos < n && amp_is_space(l[ps->pos]))
        ps->pos++;
    memset(t, 0, sizeof *t);
    t->at = l + ps->pos;
    t->col = (int)ps->pos + 1;
    if (ps->pos >= n || l[ps->pos] == '#') {
        t->kind = AMP_TOK_END;
        return;
    }
    start = ps->pos;
    if (l[start] == '(' || l[start] == ')') {
        t->kind = l[start] == '(' ? AMP_TOK_LPAREN : AMP_TOK_RPAREN;
        ps->pos++;
    } else if (l[start] == '"') {
        ps->pos++;
        while (ps->pos < n && l[ps->pos] != '"')
            ps->pos++;
        if (ps->pos >= n) {
            amp_fail(ps, t->col, "expected a closing '\"' before the end of "
                     "the line");
            t->kind = AMP_TOK_END;
            return;
        }
        t->kind = AMP_TOK_STRING;
        t->text = l + start + 1;
        t->text_len = ps->pos - start - 1;
        ps->pos++;
    } else if (amp_is_op_char(l[start])) {
        ps->pos++;
        if (ps->pos < n && l[ps->pos] == '=' && l[start] != '%')
            ps->pos++;
        t->kind = AMP_TOK_OP;
    } else {
        while (ps->pos < n && amp_is_word_char(l[ps->pos]))
            ps->pos++;
        t->kind = AMP_TOK_WORD;
        t->text = l + start;
        t->text_len = ps->pos - start;
    }
    t->len = ps->pos - start;
    if (t->kind != AMP_TOK_STRING) {
        t->text = t->text ? t->text : l + start;
        t->text_len = t->text_len ? t->text_len : t->len;
    }
}

int
amp_tok_is(const struct amp_tok *t, const char *word)
{
    return t->kind == AMP_TOK_WORD && strlen(word) == t->text_len &&
           memcmp(t->text, word, t->text_len) == 0;
}

/* Copies the token's text into buf (NUL-terminated, truncated). */
const char *
amp_tok_copy(const struct amp_tok *t, char *buf, size_t cap)
{
    size_t n = t->text_len < cap - 1 ? t->text_len : cap - 1;

    memcpy(buf, t->text, n);
    buf[n] = '\0';
    return buf;
}

/* ---- Suggestions for a misspelt word ----------------------------------- */

/* Optimal string alignment distance (insertions, deletions,
 * substitutions and swaps of adjacent bytes, each 1), ignoring ASCII
 * case; both at most AMP_NEAR_MAX bytes. */
static int
amp_edit_distance(const char *a, size_t na, const char *b, size_t nb)
{
    static const int stride = AMP_NEAR_MAX + 1;
    int d[(AMP_NEAR_MAX + 1) * (AMP_NEAR_MAX + 1)];
    size_t i, j;

    for (i = 0; i <= na; i++)
        d[i * stride] = (int)i;
    for (j = 0; j <= nb; j++)
        d[j] = (int)j;
    for (i = 1; i <= na; i++) {
        for (j = 1; j <= nb; j++) {
            int ca = tolower((unsigned char)a[i - 1]);
            int cb = tolower((unsigned char)b[j - 1]);
            int best = d[(i - 1) * stride + j - 1] + (ca != cb);

            if (d[(i - 1) * stride + j] + 1 < best)
                best = d[(i - 1) * stride + j] + 1;
            if (d[i * stride + j - 1] + 1 < best)
                best = d[i * stride + j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb &&
                d[(i - 2) * stride + j - 2] + 1 < best)
                best = d[(i - 2) * stride + j - 2] + 1;
            d[i * stride + j] = best;
        }
    }
    return d[na * stride + nb];
}

void
amp_near_init(struct amp_near *n, const struct amp_tok *t)
{
    memset(n, 0, sizeof *n);
    if (t->kind != AMP_TOK_WORD || t->text_len > AMP_NEAR_MAX)
        return;
    n->word = t->text;
    n->len = t->text_len;
}

/* Keeps name when it is nearer the word than the names tried before it,
 * and near enough: a case difference alone for words of one or two
 * bytes, one edit up to five bytes, two up to eight, three beyond. The
 * word itself (a known name out of place) is never suggested. */
void
amp_near_try(struct amp_near *n, const char *name)
{
    size_t len = strlen(name);
    int allowed, dist;

    if (!n->word || len > AMP_NEAR_MAX ||
        (len == n->len && memcmp(name, n->word, len) == 0))
        return;
    allowed = n->len <= 2 ? 0 : n->len <= 5 ? 1 : n->len <= 8 ? 2 : 3;
    dist = amp_edit_distance(n->word, n->len, name, len);
    if (dist <= allowed && (size_t)dist < len && (!n->best || dist < n->dist)) {
        n->best = name;
        n->dist = dist;
    }
}

void
amp_near_try_all(struct amp_near *n, const char *const *names)
{
    for (; *names; names++)
        amp_near_try(n, *names);
}

/* "unknown KIND 'word'; did you mean 'name'?" when a name is near the
 * current token, else "expected EXPECTED, found TOKEN". */
void
amp_unknown(struct amp_parser *ps, const char *kind,
            const struct amp_near *n, const char *expected)
{
    if (!n->best) {
        amp_expected(ps, expected);
        return;
    }
    amp_fail(ps, ps->tok.col, "unknown %s '%.*s'; did you mean '%s'?", kind,
             (int)n->len, n->word, n->best);
}

/* The current token is not one of words (where a keyword or the end of
 * the line may come): a suggestion, or "expected EXPECTED". */
void
amp_expect_keyword(struct amp_parser *ps, const char *const *words,
                   const char *expected)
{
    struct amp_near near;

    amp_near_init(&near, &ps->tok);
    amp_near_try_all(&near, words);
    amp_unknown(ps, "keyword", &near, expected);
}

/* ---- Values ------------------------------------------------------------- */

/* A non-negative integer with an optional K, M or G (powers of 1024). */
int
amp_parse_int(const struct amp_tok *t, int suffixes, int64_t *out)
{
    char buf[32], *end;
    unsigned shift = 0;
    long long v;

    if (t->kind != AMP_TOK_WORD || t->text_len >= sizeof buf ||
        t->text[0] < '0' || t->text[0] > '9')
        return -1;
    amp_tok_copy(t, buf, sizeof buf);
    errno = 0;
    v = strtoll(buf, &end, 10);
    if (errno != 0)
        return -1;
    if (suffixes && (*end == 'K' || *end == 'M' || *end == 'G')) {
        shift = *end == 'K' ? 10 : *end == 'M' ? 20 : 30;
        end++;
    }
    if (*end != '\0' || v > (INT64_MAX >> shift))
        return -1;
    *out = (int64_t)v << shift;
    return 0;
}

int
amp_parse_real(const struct amp_tok *t, double *out)
{
    char buf[40], *end;
    double v;

    if (t->kind != AMP_TOK_WORD || t->text_len >= sizeof buf)
        return -1;
    amp_tok_copy(t, buf, sizeof buf);
    errno = 0;
    v = strtod(buf, &end);
    if (errno != 0 || *end != '\0' || end == buf || !isfinite(v) || v < 0)
        return -1;
    *out = v;
    return 0;
}

/* Stores the token's text as a NUL-terminated glob; returns its offset. */
uint32_t
amp_store_text(struct amp_parser *ps, const struct amp_tok *t)
{
    struct amp_policy *p = ps->p;
    size_t at = p->strings_used;

    if (t->text_len == 0) {
        amp_fail(ps, t->col, "expected a non-empty glob");
        return 0;
    }
    if (at + t->text_len + 1 > sizeof p->strings) {
        amp_fail(ps, t->col, "too many globs: at most %d bytes of text in "
                 "a policy", AMP_POLICY_STRINGS);
        return 0;
    }
    memcpy(p->strings + at, t->text, t->text_len);
    p->strings[at + t->text_len] = '\0';
    p->strings_used = at + t->text_len + 1;
    return (uint32_t)at;
}
