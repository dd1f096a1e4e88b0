/* Code address -> module, offset and containing function, with libelf. */
#include "decide/symbolize.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
        snprintf(out->function, sizeof out->function, "%s", name);
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
    for (k = 0; elf && k < 2 && !out->function[0]; k++) {
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
    if (out->function[0])
        out->function_offset++;
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
