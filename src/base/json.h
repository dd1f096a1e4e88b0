/* JSON: a streaming writer (the report and the trace) and a small
 * document parser (the tool reads reports back). No external library. */
#ifndef AMP_JSON_H
#define AMP_JSON_H

#include <stddef.h>
#include <stdio.h>

/* ---- Writing ---------------------------------------------------------------- */

#define AMP_JSON_MAX_DEPTH 32

struct amp_json_out {
    FILE *f;
    int pretty;                  /* newlines and two-space indentation */
    int depth;
    int count[AMP_JSON_MAX_DEPTH]; /* values written at each depth */
    int after_key;               /* a key was written: its value is next */
};

void amp_json_init(struct amp_json_out *j, FILE *f, int pretty);

void amp_json_object(struct amp_json_out *j);
void amp_json_end_object(struct amp_json_out *j);
void amp_json_array(struct amp_json_out *j);
void amp_json_end_array(struct amp_json_out *j);
/* The key of the next value, inside an object. */
void amp_json_key(struct amp_json_out *j, const char *key);

/* A string, escaped (quote, backslash, control characters; bytes that are
 * not valid UTF-8 become U+FFFD); NULL writes null. */
void amp_json_string(struct amp_json_out *j, const char *s);
/* A number with 17 significant digits at most; NaN and infinities, which
 * JSON cannot hold, are written null. */
void amp_json_number(struct amp_json_out *j, double v);
void amp_json_int(struct amp_json_out *j, long long v);
void amp_json_bool(struct amp_json_out *j, int v);
void amp_json_null(struct amp_json_out *j);

/* Key and value in one call. */
void amp_json_kstring(struct amp_json_out *j, const char *key, const char *s);
void amp_json_knumber(struct amp_json_out *j, const char *key, double v);
void amp_json_kint(struct amp_json_out *j, const char *key, long long v);
void amp_json_kbool(struct amp_json_out *j, const char *key, int v);

/* ---- Reading ---------------------------------------------------------------- */

enum amp_json_type {
    AMP_JSON_NULL = 0,
    AMP_JSON_BOOL,
    AMP_JSON_NUMBER,
    AMP_JSON_STRING,
    AMP_JSON_ARRAY,
    AMP_JSON_OBJECT,
};

/* A parsed value. Arrays and objects hold `count` items; an object's keys
 * are keys[i], in the document's order. */
struct amp_json {
    enum amp_json_type type;
    int boolean;
    double number;
    char *string;                /* NUL-terminated UTF-8 */
    size_t count;
    struct amp_json *items;
    char **keys;
};

/* Parses a whole document (RFC 8259; nesting at most 64 deep). NULL on an
 * error, described in err ("line L column C: what"), or when out of
 * memory. */
struct amp_json *amp_json_parse(const char *text, size_t len, char *err,
                                size_t err_len);
void amp_json_free(struct amp_json *v);

/* The member `key` of an object; NULL when v is not an object or has no
 * such member. */
const struct amp_json *amp_json_get(const struct amp_json *v,
                                    const char *key);
/* v's string, or NULL when v is not a string (or is NULL). */
const char *amp_json_str(const struct amp_json *v);
/* v's number, or `otherwise` when v is not a number. */
double amp_json_num(const struct amp_json *v, double otherwise);

#endif
