/* Finds the real vendor functions behind the hooks. */
#ifndef AMP_RESOLVE_H
#define AMP_RESOLVE_H

/* The definition of `name` that the hook hides: dlsym(RTLD_NEXT) first,
 * then the already-loaded `soname` (a program that opened it in a local
 * scope). Never loads a library. NULL when neither has it. */
void *amp_resolve(const char *soname, const char *name);

/* Resolves names[i] into *slots[i] for i < n; logs one warning per missing
 * symbol and returns how many were missing. */
int amp_resolve_all(const char *soname, const char *const *names,
                    void **const *slots, int n);

#endif
