/* Symbolization of a code address: the module it lies in (dladdr's link
 * map: file and load bias) and the function that contains it, from the
 * module's full symbol table (.symtab, static functions included), else
 * .dynsym; a stripped module gives module + offset. */
#ifndef AMP_SYMBOLIZE_H
#define AMP_SYMBOLIZE_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

#define AMP_SYMBOL_LEN 256
#define AMP_MODULE_LEN 4096

struct amp_symbol {
    char module[AMP_MODULE_LEN];  /* the module's file path */
    uintptr_t offset;             /* the address minus the load bias */
    char function[AMP_SYMBOL_LEN]; /* "" when no symbol covers it */
    uintptr_t function_offset;    /* the address minus the function's */
    int from_symtab;              /* 1: .symtab, 0: .dynsym or none */
};

/* Resolves addr (a return address: the call is the byte before it). Fails
 * with AMP_ERR_UNAVAILABLE when no loaded module contains it. Reads the
 * module's file: never call it on a hot path without a cache. */
enum amp_status amp_symbolize(const void *addr, struct amp_symbol *out);

/* The name a policy's caller glob matches: the function, or the offset in
 * the module ("0x1a2b") when no symbol covers the address. */
const char *amp_symbol_caller(const struct amp_symbol *s, char *buf,
                              size_t cap);

#endif
