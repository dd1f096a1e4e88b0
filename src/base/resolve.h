/* Finds the real vendor functions behind the hooks. */
#ifndef AMP_RESOLVE_H
#define AMP_RESOLVE_H

/* The definition of `name` that the hook hides: dlsym(RTLD_NEXT) first,
 * unless another release of soname's library defines it there
 * (libcublas.so.12 for libcublas.so.13), then the already-loaded `soname`
 * (a program that opened it in a local scope). Never loads a library.
 * NULL when neither has it. */
void *amp_resolve(const char *soname, const char *name);

/* The C library's own dlsym and dlvsym, found in its symbol table (never
 * through the shim's interposer); NULL until amp_real_dl_init() found
 * them. amp_dlsym is dlsym through them: the shim's own lookups. */
extern void *(*amp_real_dlsym)(void *, const char *)
    __attribute__((visibility("hidden")));
extern void *(*amp_real_dlvsym)(void *, const char *, const char *)
    __attribute__((visibility("hidden")));
void amp_real_dl_init(void) __attribute__((visibility("hidden")));
void *amp_dlsym(void *handle, const char *name);

/* Resolves names[i] into *slots[i] for i < n; logs one warning per missing
 * symbol and returns how many were missing. */
int amp_resolve_all(const char *soname, const char *const *names,
                    void **const *slots, int n);

#endif
