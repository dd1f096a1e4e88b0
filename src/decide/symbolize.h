/* Symbolization of a code address: the module it lies in (dladdr's link
 * map: file and load bias) and the function that contains it, from the
 * module's full symbol table (.symtab, static functions included), else
 * .dynsym; a stripped module gives module + offset. Also the names users
 * know: a symbol without its compiler suffixes, demangled, and the one
 * label of a call site that the shim and the tool print. */
#ifndef AMP_SYMBOLIZE_H
#define AMP_SYMBOLIZE_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

#define AMP_SYMBOL_LEN 1024       /* a symbol or function name, NUL included */
#define AMP_MODULE_LEN 4096
/* A site label: a function name, a module's file name and an offset. */
#define AMP_LABEL_LEN (AMP_SYMBOL_LEN + 320)

struct amp_symbol {
    char module[AMP_MODULE_LEN];  /* the module's file path */
    uintptr_t offset;             /* the address minus the load bias */
    char symbol[AMP_SYMBOL_LEN];  /* the symbol table's name ("" when no
                                     symbol covers it) */
    char function[AMP_SYMBOL_LEN]; /* the same as users know it
                                      (amp_function_name); "" when no
                                      symbol covers it */
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

/* The name users know a function by: `symbol` without the compiler's
 * suffixes (amp_symbol_base), demangled when it is a C++ (Itanium ABI)
 * name and the C++ runtime's demangler is there; else the symbol without
 * its suffixes. A demangled name longer than `cap` is not used. Looks the
 * demangler up in the process, and the first time a name starts with
 * "_Z" without one there, loads libstdc++.so.6: call it where a name is
 * resolved once, never per call. Returns out. */
const char *amp_function_name(const char *symbol, char *out, size_t cap);

/* The length of `symbol` without the suffixes that compilers append to
 * the clones and parts of a function they make: ".isra.N",
 * ".constprop.N", ".part.N", ".cold", ".cold.N", ".hot", ".lto_priv.N",
 * ".localalias", ".clone.N", ".llvm.N", ".specialized.N", each repeated
 * or combined (".constprop.0.isra.0", ".part.0.cold"). */
size_t amp_symbol_base(const char *symbol);

/* The label of a call site, as every view names it: "FUNCTION
 * (MODULE+0xOFFSET)", MODULE the file name of the module's path and
 * FUNCTION "0x1a2b" (the offset) when `function` is NULL or "";
 * "unknown caller (no module)" when `module` is NULL or "". Returns buf,
 * which AMP_LABEL_LEN bytes always hold whole for a function name of
 * less than AMP_SYMBOL_LEN bytes and a module file name of less than
 * 256. */
const char *amp_symbol_label(char *buf, size_t cap, const char *function,
                             const char *module, uintptr_t offset);

#endif
