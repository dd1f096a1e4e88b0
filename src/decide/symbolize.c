/* Code address -> module, offset and containing function, with libelf;
 * a symbol -> the name users know (compiler suffixes dropped, C++
 * demangled); a site's label. */
#include "decide/symbolize.h"

#include "base/resolve.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- Names ------------------------------------------------------------------ */

/* The words of the suffixes gcc and clang give a function's clones and
 * split-off parts (amp_symbol_base). */
static const char *const amp_suffix_words[] = {
    "isra", "constprop", "part", "cold", "hot", "lto_priv", "localalias",
    "clone", "llvm", "specialized",
};

static int
amp_suffix_word(const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < sizeof amp_suffix_words / sizeof *amp_suffix_words; i++)
        if (strlen(amp_suffix_words[i]) == n &&
            memcmp(amp_suffix_words[i], s, n) == 0)
            return 1;
    return 0;
}

/* Where the component that ends at `end` starts: after the '.' before it,
 * or 0 when there is none. */
static size_t
amp_component(const char *s, size_t end)
{
    while (end > 0 && s[end - 1] != '.')
        end--;
    return end;
}

size_t
amp_symbol_base(const char *symbol)
{
    size_t end = strlen(symbol);

    for (;;) {
        size_t start = amp_component(symbol, end), word_end = end;

        /* ".N" counts only after a suffix word: "isra.0". */
        if (start > 0 && start < end &&
            strspn(symbol + start, "0123456789") == end - start) {
            word_end = start - 1;
            start = amp_component(symbol, word_end);
        }
        /* The name before the suffix keeps at least one byte. */
        if (start < 2 || !amp_suffix_word(symbol + start, word_end - start))
            return end;
        end = start - 1;
    }
}

/* The Itanium C++ ABI's demangler (libstdc++'s and libc++abi's alike). */
typedef char *(*amp_demangle_fn)(const char *mangled, char *buf,
                                 size_t *len, int *status);

static amp_demangle_fn amp_demangler;
static pthread_once_t amp_demangler_once = PTHREAD_ONCE_INIT;

/* The process's demangler (any C++ program has one), through the C
 * library's own dlsym, not the shim's interposer; else libstdc++.so.6's,
 * loaded for it and kept. NULL when neither is there. */
static void
amp_demangler_find(void)
{
    void *fn = amp_dlsym(RTLD_DEFAULT, "__cxa_demangle");

    if (!fn) {
        void *lib = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);

        if (lib)
            fn = amp_dlsym(lib, "__cxa_demangle");
    }
    *(void **)&amp_demangler = fn;
}

const char *
amp_function_name(const char *symbol, char *out, size_t cap)
{
    char base[AMP_SYMBOL_LEN];
    size_t n = amp_symbol_base(symbol);
    char *plain;
    int status = -1;

    if (cap == 0)
        return out;
    snprintf(out, cap, "%.*s", (int)n, symbol);
    if (n >= sizeof base || strncmp(symbol, "_Z", 2) != 0)
        return out;
    memcpy(base, symbol, n);
    base[n] = '\0';
    pthread_once(&amp_demangler_once, amp_demangler_find);
    if (!amp_demangler)
        return out;
    plain = amp_demangler(base, NULL, NULL, &status);
    if (plain && status == 0 && strlen(plain) < cap)
        snprintf(out, cap, "%s", plain);
    free(plain);
    return out;
}

const char *
amp_symbol_label(char *buf, size_t cap, const char *function,
                 const char *module, uintptr_t offset)
{
    const char *base;

    if (!module || !module[0]) {
        snprintf(buf, cap, "unknown caller (no module)");
        return buf;
    }
    base = strrchr(module, '/');
    base = base && base[1] ? base + 1 : module;
    if (function && function[0])
        snprintf(buf, cap, "%s (%s+0x%lx)", function, base,
                 (unsigned long)offset);
    else
        snprintf(buf, cap, "0x%lx (%s+0x%lx)", (unsigned long)offset, base,
                 (unsigned long)offset);
    return buf;
}

/* ---- Addresses -------------------------------------------------------------- */

/* Searches one symbol table section for the function containing off. */
static int
amp_symtab_find(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, uintptr_t off,
                struct amp_symbol *out)
{
    Elf_Data *data = elf_getdata(scn, NULL);
    size_t i, n;

    if (!data || sh->sh_entsize == 0)
        return 0;
    n = sh->sh_size / sh->sh_entsize;
    for (i = 1; i < n; i++) {
        GElf_Sym sym;
        const char *name;

        if (!gelf_getsym(data, (int)i, &sym) ||
            GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
            sym.st_shndx == SHN_UNDEF || off < sym.st_value ||
            off >= sym.st_value + (sym.st_size ? sym.st_size : 1))
            continue;
        name = elf_strptr(elf, sh->sh_link, sym.st_name);
        if (!name || !*name)
            continue;
        snprintf(out->symbol, sizeof out->symbol, "%s", name);
        out->function_offset = off - sym.st_value;
        return 1;
    }
    return 0;
}

/* .symtab first (static functions), then .dynsym. */
static void
amp_module_find(const char *path, uintptr_t off, struct amp_symbol *out)
{
    static const Elf64_Word kinds[] = {SHT_SYMTAB, SHT_DYNSYM};
    Elf *elf;
    int fd, k;

    if (elf_version(EV_CURRENT) == EV_NONE)
        return;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    elf = elf_begin(fd, ELF_C_READ, NULL);
    for (k = 0; elf && k < 2 && !out->symbol[0]; k++) {
        Elf_Scn *scn = NULL;

        while ((scn = elf_nextscn(elf, scn)) != NULL) {
            GElf_Shdr sh;

            if (gelf_getshdr(scn, &sh) && sh.sh_type == kinds[k] &&
                amp_symtab_find(elf, scn, &sh, off, out)) {
                out->from_symtab = kinds[k] == SHT_SYMTAB;
                break;
            }
        }
    }
    if (elf)
        elf_end(elf);
    close(fd);
}

enum amp_status
amp_symbolize(const void *addr, struct amp_symbol *out)
{
    struct link_map *map = NULL;
    Dl_info info;
    ssize_t n;

    memset(out, 0, sizeof *out);
    if (!dladdr1(addr, &info, (void **)&map, RTLD_DL_LINKMAP) || !map)
        return AMP_ERR_UNAVAILABLE;
    if (map->l_name && map->l_name[0]) {
        snprintf(out->module, sizeof out->module, "%s", map->l_name);
    } else {
        /* The main program's link map has no name. */
        n = readlink("/proc/self/exe", out->module, sizeof out->module - 1);
        out->module[n > 0 ? n : 0] = '\0';
    }
    out->offset = (uintptr_t)addr - map->l_addr;
    /* A return address may be one past a noreturn function's end: look
     * the call instruction up, and report the return address's offset. */
    amp_module_find(out->module, out->offset - 1, out);
    if (out->symbol[0]) {
        out->function_offset++;
        amp_function_name(out->symbol, out->function, sizeof out->function);
    }
    return AMP_OK;
}

const char *
amp_symbol_caller(const struct amp_symbol *s, char *buf, size_t cap)
{
    if (s->function[0])
        return s->function;
    snprintf(buf, cap, "0x%lx", (unsigned long)s->offset);
    return buf;
}
