/* The C library's own dlsym and dlvsym, which the shim interposes
 * (hooks/dlsym.c), found in the loader's list of objects and their dynamic
 * symbol tables. A sanitizer's runtime looks its functions up with dlsym
 * while it starts, before its shadow memory and interceptors work: this
 * file is built without sanitizers (src/meson.build) and calls no library
 * function. */
#include "base/resolve.h"

#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>

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
    const char *a = strtab + sym->st_name, *b = name;

    if (sym->st_shndx == SHN_UNDEF || sym->st_value == 0 ||
        ELF64_ST_TYPE(sym->st_info) != STT_FUNC)
        return 0;
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
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

