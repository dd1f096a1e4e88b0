/* The policy language's lexer (policy_lex.c), private to its parser
 * (policy_parse.c): one line's tokens, the parser's state, the error
 * messages with a suggestion for a misspelt word, and tokens' values. */
#ifndef AMP_POLICY_LEX_H
#define AMP_POLICY_LEX_H

#include "decide/policy.h"

#include <stddef.h>
#include <stdint.h>

enum amp_tok_kind {
    AMP_TOK_END = 0,             /* end of the line (or a comment) */
    AMP_TOK_WORD,
    AMP_TOK_STRING,              /* "...": text without the quotes */
    AMP_TOK_OP,                  /* < <= == != >= > % */
    AMP_TOK_LPAREN,
    AMP_TOK_RPAREN,
};

struct amp_tok {
    enum amp_tok_kind kind;
    const char *at;              /* the token's first byte in the line */
    size_t len;
    const char *text;            /* WORD, STRING: its text */
    size_t text_len;
    int col;
};

struct amp_parser {
    struct amp_policy *p;
    struct amp_policy_error *err;
    const char *line;            /* the current line, not NUL-terminated */
    size_t line_len;
    int lineno;
    size_t pos;                  /* next byte of line */
    struct amp_tok tok;          /* the current token */
    int depth;
    int failed;
};

/* Fails the parse at column col of the current line. */
void amp_fail(struct amp_parser *ps, int col, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define AMP_NEAR_MAX 64 /* longer words get no suggestion */

/* The known name nearest a word, by edit distance. */
struct amp_near {
    const char *word;
    size_t len;
    const char *best;            /* NULL: nothing close enough */
    int dist;
};

/* Fails with "expected WHAT, found TOKEN". */
void amp_expected(struct amp_parser *ps, const char *what);
/* Reads the next token of the line into ps->tok. */
void amp_next(struct amp_parser *ps);
/* 1 when t is the word `word`. */
int amp_tok_is(const struct amp_tok *t, const char *word);
/* t's text, NUL-terminated in buf (truncated to cap). */
const char *amp_tok_copy(const struct amp_tok *t, char *buf, size_t cap);

/* Suggestions: the known name nearest t's word, tried name by name. */
void amp_near_init(struct amp_near *n, const struct amp_tok *t);
void amp_near_try(struct amp_near *n, const char *name);
void amp_near_try_all(struct amp_near *n, const char *const *names);
/* "unknown KIND 'word'; did you mean 'name'?", else "expected EXPECTED". */
void amp_unknown(struct amp_parser *ps, const char *kind,
                 const struct amp_near *n, const char *expected);
/* The current token is not one of words: a suggestion, or "expected
 * EXPECTED". */
void amp_expect_keyword(struct amp_parser *ps, const char *const *words,
                        const char *expected);

/* Tokens' values, 0 when read, -1 when the token is none: a non-negative
 * integer (with K, M or G when `suffixes`), a non-negative real; and a
 * glob stored in the policy's text, its offset. */
int amp_parse_int(const struct amp_tok *t, int suffixes, int64_t *out);
int amp_parse_real(const struct amp_tok *t, double *out);
uint32_t amp_store_text(struct amp_parser *ps, const struct amp_tok *t);

#endif
