/* Resolution of real vendor functions: RTLD_NEXT, then RTLD_NOLOAD; and
 * the C library's own dlsym and dlvsym, which the shim interposes. */
#include "base/resolve.h"

#include "base/log.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- The C library's dlsym and dlvsym ----------------------------------- */

typedef void *(*amp_dlsym_fn)(void *, const char *);
typedef void *(*amp_dlvsym_fn)(void *, const char *, const char *);

/* Read by the interposer's entry (hooks/dlsym.c) before it calls C. */
amp_dlsym_fn amp_real_dlsym;
amp_dlvsym_fn amp_real_dlvsym;

/* This object's own dynamic section (the linker defines it). */
extern ElfW(Dyn) _DYNAMIC[] __attribute__((visibility("hidden")));

/* A pointer from an object's dynamic section: the loader relocates most
 * of them in place, not those of a read-only section (the vDSO's). */
static uintptr_t
amp_dyn_ptr(uintptr_t base, uintptr_t v)
{
    return v < base ? v + base : v;
}

static uint32_t
amp_gnu_hash(const char *name)
{
    uint32_t h = 5381;

    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        h = h * 33 + *c;
    return h;
}

static uint32_t
amp_sysv_hash(const char *name)
{
    uint32_t h = 0;

    for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
        h = (h << 4) + *c;
        h ^= (h >> 24) & 0xf0;
    }
    return h & 0x0fffffff;
}

/* Whether symbol i is a function the object defines under `name`. */
static int
amp_sym_is(const ElfW(Sym) *sym, const char *strtab, const char *name)
{
    return sym->st_shndx != SHN_UNDEF && sym->st_value != 0 &&
           ELF64_ST_TYPE(sym->st_info) == STT_FUNC &&
           strcmp(strtab + sym->st_name, name) == 0;
}

/* The address of the function `name` the object loaded at base with
 * dynamic section dyn defines, from its hash table (GNU, else SysV); NULL
 * when it has none. */
static void *
amp_elf_lookup(uintptr_t base, const ElfW(Dyn) *dyn, const char *name)
{
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const uint32_t *gnu = NULL, *sysv = NULL;

    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        uintptr_t p = amp_dyn_ptr(base, dyn->d_un.d_ptr);

        if (dyn->d_tag == DT_SYMTAB)
            symtab = (const ElfW(Sym) *)p;
        else if (dyn->d_tag == DT_STRTAB)
            strtab = (const char *)p;
        else if (dyn->d_tag == DT_GNU_HASH)
            gnu = (const uint32_t *)p;
        else if (dyn->d_tag == DT_HASH)
            sysv = (const uint32_t *)p;
    }
    if (!symtab || !strtab)
        return NULL;
    if (gnu) {
        uint32_t nbuckets = gnu[0], first = gnu[1], bloom_words = gnu[2];
        const uint32_t *buckets =
            (const uint32_t *)((const ElfW(Addr) *)&gnu[4] + bloom_words);
        const uint32_t *chain = buckets + nbuckets;
        uint32_t h = amp_gnu_hash(name), i;

        if (nbuckets == 0 || (i = buckets[h % nbuckets]) < first)
            return NULL;
        for (;; i++) {
            uint32_t h2 = chain[i - first];

            if ((h | 1) == (h2 | 1) && amp_sym_is(&symtab[i], strtab, name))
                return (void *)(base + symtab[i].st_value);
            if (h2 & 1)
                return NULL;
        }
    }
    if (sysv) {
        uint32_t nbucket = sysv[0];
        const uint32_t *bucket = &sysv[2], *chain = &sysv[2 + nbucket];

        for (uint32_t i = bucket[amp_sysv_hash(name) % nbucket]; i;
             i = chain[i])
            if (amp_sym_is(&symtab[i], strtab, name))
                return (void *)(base + symtab[i].st_value);
    }
    return NULL;
}

/* Each loaded object but this one, in load order (the loader's list), until
 * one defines both: the C library (libdl before glibc 2.34). No function a
 * sanitizer intercepts is called: a sanitizer's runtime looks its own
 * functions up with dlsym before its interceptors work. Two threads that
 * get here at once find the same functions. */
void
amp_real_dl_init(void)
{
    if (__atomic_load_n(&amp_real_dlvsym, __ATOMIC_ACQUIRE))
        return;
    for (const struct link_map *lm = _r_debug.r_map; lm; lm = lm->l_next) {
        void *s, *v;

        if (lm->l_ld == _DYNAMIC)
            continue;
        s = amp_elf_lookup(lm->l_addr, lm->l_ld, "dlsym");
        v = amp_elf_lookup(lm->l_addr, lm->l_ld, "dlvsym");
        if (!s || !v)
            continue;
        __atomic_store_n((void **)&amp_real_dlsym, s, __ATOMIC_RELEASE);
        __atomic_store_n((void **)&amp_real_dlvsym, v, __ATOMIC_RELEASE);
        return;
    }
}

void *
amp_dlsym(void *handle, const char *name)
{
    amp_real_dl_init();
    return amp_real_dlsym ? amp_real_dlsym(handle, name) : NULL;
}

/* ---- Vendor functions ----------------------------------------------------- */

void *
amp_resolve(const char *soname, const char *name)
{
    void *fn = amp_dlsym(RTLD_NEXT, name);
    void *lib;

    if (fn)
        return fn;
    lib = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
        return NULL;
    fn = amp_dlsym(lib, name);
    /* The program still holds the library; drop only our reference. */
    dlclose(lib);
    return fn;
}

int
amp_resolve_all(const char *soname, const char *const *names,
                void **const *slots, int n)
{
    int missing = 0;
    int i;

    for (i = 0; i < n; i++) {
        *slots[i] = amp_resolve(soname, names[i]);
        if (!*slots[i]) {
            missing++;
            amp_log(AMP_LOG_WARN, "%s not found in %s or the process; "
                    "calls that need it stay FP32", names[i], soname);
        }
    }
    return missing;
}
