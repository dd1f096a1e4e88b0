/* The JSON writer and parser. */
#include "base/json.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- Writing ---------------------------------------------------------------- */

void
amp_json_init(struct amp_json_out *j, FILE *f, int pretty)
{
    memset(j, 0, sizeof *j);
    j->f = f;
    j->pretty = pretty;
}

static void
amp_json_indent(struct amp_json_out *j)
{
    int i;

    if (!j->pretty)
        return;
    fputc('\n', j->f);
    for (i = 0; i < j->depth; i++)
        fputs("  ", j->f);
}

/* Separator and indentation before a value or a key. */
static void
amp_json_before(struct amp_json_out *j)
{
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (j->depth > 0 && j->count[j->depth - 1]++ > 0)
        fputc(',', j->f);
    if (j->depth > 0)
        amp_json_indent(j);
}

static void
amp_json_open(struct amp_json_out *j, int c)
{
    amp_json_before(j);
    fputc(c, j->f);
    if (j->depth < AMP_JSON_MAX_DEPTH)
        j->count[j->depth++] = 0;
}

static void
amp_json_close(struct amp_json_out *j, int c)
{
    int had = j->depth > 0 && j->count[j->depth - 1] > 0;

    if (j->depth > 0)
        j->depth--;
    if (had)
        amp_json_indent(j);
    fputc(c, j->f);
}

void
amp_json_object(struct amp_json_out *j)
{
    amp_json_open(j, '{');
}

void
amp_json_end_object(struct amp_json_out *j)
{
    amp_json_close(j, '}');
}

void
amp_json_array(struct amp_json_out *j)
{
    amp_json_open(j, '[');
}

void
amp_json_end_array(struct amp_json_out *j)
{
    amp_json_close(j, ']');
}

/* Length of the valid UTF-8 sequence at s, 0 when it is not one. */
static size_t
amp_utf8_len(const unsigned char *s)
{
    uint32_t cp;
    size_t n, i;

    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        n = 2, cp = s[0] & 0x1f;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        n = 3, cp = s[0] & 0x0f;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        n = 4, cp = s[0] & 0x07;
    else
        return 0;
    for (i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return n;
}

static void
amp_json_quoted(FILE *f, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;

    fputc('"', f);
    while (*s) {
        size_t n = amp_utf8_len(s);

        if (*s == '"' || *s == '\\') {
            fputc('\\', f);
            fputc(*s, f);
        } else if (*s == '\n') {
            fputs("\\n", f);
        } else if (*s == '\t') {
            fputs("\\t", f);
        } else if (*s == '\r') {
            fputs("\\r", f);
        } else if (*s < 0x20 || *s == 0x7f) {
            fprintf(f, "\\u%04x", *s);
        } else if (n == 0) {
            fputs("\\ufffd", f);
            n = 1;
        } else {
            fwrite(s, 1, n, f);
        }
        s += n ? n : 1;
    }
    fputc('"', f);
}

void
amp_json_key(struct amp_json_out *j, const char *key)
{
    amp_json_before(j);
    amp_json_quoted(j->f, key);
    fputs(j->pretty ? ": " : ":", j->f);
    j->after_key = 1;
}

void
amp_json_string(struct amp_json_out *j, const char *s)
{
    if (!s) {
        amp_json_null(j);
        return;
    }
    amp_json_before(j);
    amp_json_quoted(j->f, s);
}

void
amp_json_number(struct amp_json_out *j, double v)
{
    char buf[40];

    if (!isfinite(v)) {
        amp_json_null(j);
        return;
    }
    amp_json_before(j);
    /* Integral values print as integers; others with the fewest digits
     * that read back exactly. */
    if (v > -1e15 && v < 1e15 && v == (double)(long long)v) {
        fprintf(j->f, "%.0f", v);
        return;
    }
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, sizeof buf, "%.17g", v);
    fputs(buf, j->f);
}

void
amp_json_int(struct amp_json_out *j, long long v)
{
    amp_json_before(j);
    fprintf(j->f, "%lld", v);
}

void
amp_json_bool(struct amp_json_out *j, int v)
{
    amp_json_before(j);
    fputs(v ? "true" : "false", j->f);
}

void
amp_json_null(struct amp_json_out *j)
{
    amp_json_before(j);
    fputs("null", j->f);
}

void
amp_json_kstring(struct amp_json_out *j, const char *key, const char *s)
{
    amp_json_key(j, key);
    amp_json_string(j, s);
}

void
amp_json_knumber(struct amp_json_out *j, const char *key, double v)
{
    amp_json_key(j, key);
    amp_json_number(j, v);
}

void
amp_json_kint(struct amp_json_out *j, const char *key, long long v)
{
    amp_json_key(j, key);
    amp_json_int(j, v);
}

void
amp_json_kbool(struct amp_json_out *j, const char *key, int v)
{
    amp_json_key(j, key);
    amp_json_bool(j, v);
}

/* ---- Reading ---------------------------------------------------------------- */

#define AMP_JSON_PARSE_DEPTH 64

struct amp_json_in {
    const char *s, *end;
    const char *start;
    char *err;
    size_t err_len;
    int failed;
};

static int amp_json_value(struct amp_json_in *in, struct amp_json *v,
                          int depth);

static int
amp_json_fail(struct amp_json_in *in, const char *what)
{
    const char *p;
    int line = 1, col = 1;

    if (in->failed)
        return -1;
    in->failed = 1;
    for (p = in->start; p < in->s && p < in->end; p++) {
        if (*p == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    if (in->err && in->err_len)
        snprintf(in->err, in->err_len, "line %d column %d: %s", line, col,
                 what);
    return -1;
}

static void
amp_json_space(struct amp_json_in *in)
{
    while (in->s < in->end && (*in->s == ' ' || *in->s == '\t' ||
                               *in->s == '\n' || *in->s == '\r'))
        in->s++;
}

static int
amp_json_literal(struct amp_json_in *in, const char *word)
{
    size_t n = strlen(word);

    if ((size_t)(in->end - in->s) < n || memcmp(in->s, word, n) != 0)
        return amp_json_fail(in, "unexpected character");
    in->s += n;
    return 0;
}

static int
amp_json_hex4(struct amp_json_in *in, uint32_t *out)
{
    int i;

    *out = 0;
    if (in->end - in->s < 4)
        return amp_json_fail(in, "short \\u escape");
    for (i = 0; i < 4; i++) {
        char c = *in->s++;

        *out <<= 4;
        if (c >= '0' && c <= '9')
            *out |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            *out |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            *out |= (uint32_t)(c - 'A' + 10);
        else
            return amp_json_fail(in, "bad \\u escape");
    }
    return 0;
}

static size_t
amp_utf8_put(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | cp >> 12);
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | cp >> 18);
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* amp_json_fail for functions that return a byte count. */
static size_t
amp_json_bad(struct amp_json_in *in, const char *what)
{
    amp_json_fail(in, what);
    return 0;
}

/* One escape after the backslash into out; its byte count, or 0. */
static size_t
amp_json_escape(struct amp_json_in *in, char *out)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *at;
    uint32_t cp, lo;

    if (in->s >= in->end)
        return amp_json_bad(in, "unterminated string");
    at = strchr(from, *in->s);
    if (*in->s && at) {
        in->s++;
        out[0] = to[at - from];
        return 1;
    }
    if (*in->s++ != 'u')
        return amp_json_bad(in, "bad escape");
    if (amp_json_hex4(in, &cp) != 0)
        return 0;
    if (cp >= 0xdc00 && cp <= 0xdfff)
        return amp_json_bad(in, "lone low surrogate");
    if (cp >= 0xd800 && cp <= 0xdbff) {
        if (in->end - in->s < 2 || in->s[0] != '\\' || in->s[1] != 'u')
            return amp_json_bad(in, "lone high surrogate");
        in->s += 2;
        if (amp_json_hex4(in, &lo) != 0)
            return 0;
        if (lo < 0xdc00 || lo > 0xdfff)
            return amp_json_bad(in, "bad surrogate pair");
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    }
    return amp_utf8_put(out, cp);
}

static int
amp_json_string_in(struct amp_json_in *in, char **out)
{
    const char *p;
    char *buf;
    size_t n = 0;

    in->s++; /* the opening quote */
    for (p = in->s; p < in->end && *p != '"'; p++)
        if (*p == '\\')
            p++;
    /* Escapes never grow: \uXXXX is 6 bytes for at most 3 (4 for 12). */
    buf = malloc((size_t)(p - in->s) + 1);
    if (!buf)
        return amp_json_fail(in, "out of memory");
    while (in->s < in->end && *in->s != '"') {
        unsigned char c = (unsigned char)*in->s;

        if (c < 0x20) {
            free(buf);
            return amp_json_fail(in, "control character in a string");
        }
        if (c == '\\') {
            size_t k;

            in->s++;
            k = amp_json_escape(in, buf + n);
            if (k == 0) {
                free(buf);
                return -1;
            }
            n += k;
            continue;
        }
        buf[n++] = (char)c;
        in->s++;
    }
    if (in->s >= in->end) {
        free(buf);
        return amp_json_fail(in, "unterminated string");
    }
    in->s++;
    buf[n] = '\0';
    *out = buf;
    return 0;
}

static int
amp_json_number_in(struct amp_json_in *in, struct amp_json *v)
{
    const char *p = in->s;
    char buf[64];
    size_t n;

    if (p < in->end && *p == '-')
        p++;
    if (p < in->end && *p == '0')
        p++;
    else if (p < in->end && *p >= '1' && *p <= '9')
        while (p < in->end && *p >= '0' && *p <= '9')
            p++;
    else
        return amp_json_fail(in, "bad number");
    if (p < in->end && *p == '.') {
        if (++p >= in->end || *p < '0' || *p > '9')
            return amp_json_fail(in, "bad number");
        while (p < in->end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < in->end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < in->end && (*p == '+' || *p == '-'))
            p++;
        if (p >= in->end || *p < '0' || *p > '9')
            return amp_json_fail(in, "bad number");
        while (p < in->end && *p >= '0' && *p <= '9')
            p++;
    }
    n = (size_t)(p - in->s);
    if (n >= sizeof buf)
        return amp_json_fail(in, "number too long");
    memcpy(buf, in->s, n);
    buf[n] = '\0';
    v->type = AMP_JSON_NUMBER;
    v->number = strtod(buf, NULL);
    in->s = p;
    return 0;
}

/* Appends an item (and for objects its key) to a container. */
static struct amp_json *
amp_json_push(struct amp_json_in *in, struct amp_json *c, size_t *cap)
{
    if (c->count == *cap) {
        size_t ncap = *cap ? *cap * 2 : 4;
        struct amp_json *items = realloc(c->items, ncap * sizeof *items);
        char **keys;

        if (!items) {
            amp_json_fail(in, "out of memory");
            return NULL;
        }
        c->items = items;
        if (c->type == AMP_JSON_OBJECT) {
            keys = realloc(c->keys, ncap * sizeof *keys);
            if (!keys) {
                amp_json_fail(in, "out of memory");
                return NULL;
            }
            c->keys = keys;
        }
        *cap = ncap;
    }
    memset(&c->items[c->count], 0, sizeof c->items[0]);
    if (c->keys)
        c->keys[c->count] = NULL;
    return &c->items[c->count++];
}

static int
amp_json_container(struct amp_json_in *in, struct amp_json *v, int depth)
{
    int object = *in->s == '{';
    char close = object ? '}' : ']';
    size_t cap = 0;

    if (depth >= AMP_JSON_PARSE_DEPTH)
        return amp_json_fail(in, "nested too deeply");
    v->type = object ? AMP_JSON_OBJECT : AMP_JSON_ARRAY;
    in->s++;
    amp_json_space(in);
    if (in->s < in->end && *in->s == close) {
        in->s++;
        return 0;
    }
    for (;;) {
        struct amp_json *item;
        char *key = NULL;

        amp_json_space(in);
        if (object) {
            if (in->s >= in->end || *in->s != '"')
                return amp_json_fail(in, "expected a key");
            if (amp_json_string_in(in, &key) != 0)
                return -1;
            amp_json_space(in);
            if (in->s >= in->end || *in->s != ':') {
                free(key);
                return amp_json_fail(in, "expected ':'");
            }
            in->s++;
        }
        item = amp_json_push(in, v, &cap);
        if (!item) {
            free(key);
            return -1;
        }
        if (object)
            v->keys[v->count - 1] = key;
        if (amp_json_value(in, item, depth + 1) != 0)
            return -1;
        amp_json_space(in);
        if (in->s < in->end && *in->s == ',') {
            in->s++;
            continue;
        }
        if (in->s < in->end && *in->s == close) {
            in->s++;
            return 0;
        }
        return amp_json_fail(in, object ? "expected ',' or '}'"
                                        : "expected ',' or ']'");
    }
}

static int
amp_json_value(struct amp_json_in *in, struct amp_json *v, int depth)
{
    amp_json_space(in);
    if (in->s >= in->end)
        return amp_json_fail(in, "unexpected end");
    switch (*in->s) {
    case '{':
    case '[':
        return amp_json_container(in, v, depth);
    case '"':
        v->type = AMP_JSON_STRING;
        return amp_json_string_in(in, &v->string);
    case 't':
        v->type = AMP_JSON_BOOL;
        v->boolean = 1;
        return amp_json_literal(in, "true");
    case 'f':
        v->type = AMP_JSON_BOOL;
        return amp_json_literal(in, "false");
    case 'n':
        v->type = AMP_JSON_NULL;
        return amp_json_literal(in, "null");
    default:
        return amp_json_number_in(in, v);
    }
}

static void
amp_json_clear(struct amp_json *v)
{
    size_t i;

    for (i = 0; i < v->count; i++) {
        amp_json_clear(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
}

struct amp_json *
amp_json_parse(const char *text, size_t len, char *err, size_t err_len)
{
    struct amp_json_in in = {text, text + len, text, err, err_len, 0};
    struct amp_json *v = calloc(1, sizeof *v);

    if (!v)
        return NULL;
    if (amp_json_value(&in, v, 0) == 0) {
        amp_json_space(&in);
        if (in.s == in.end)
            return v;
        amp_json_fail(&in, "text after the value");
    }
    amp_json_free(v);
    return NULL;
}

void
amp_json_free(struct amp_json *v)
{
    if (!v)
        return;
    amp_json_clear(v);
    free(v);
}

const struct amp_json *
amp_json_get(const struct amp_json *v, const char *key)
{
    size_t i;

    if (!v || v->type != AMP_JSON_OBJECT)
        return NULL;
    for (i = 0; i < v->count; i++)
        if (v->keys[i] && strcmp(v->keys[i], key) == 0)
            return &v->items[i];
    return NULL;
}

const char *
amp_json_str(const struct amp_json *v)
{
    return v && v->type == AMP_JSON_STRING ? v->string : NULL;
}

double
amp_json_num(const struct amp_json *v, double otherwise)
{
    return v && v->type == AMP_JSON_NUMBER ? v->number : otherwise;
}
