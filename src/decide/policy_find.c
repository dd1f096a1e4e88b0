/* Which policy applies to this process: AMPSHIM_POLICY, the per-user and
 * system policy directories (XDG), or the built-in default; the program's
 * name and ELF build-id that match lines test. A file with an error in a
 * directory applies to the programs its match lines accept; the files
 * passed over are kept as a trail for the log, the report and `ampshim
 * policy which`. */
#include "decide/policy.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Generated from policy/default.policy by scripts/embed.py. */
extern const unsigned char amp_default_policy[];
extern const size_t amp_default_policy_size;

const char *
amp_policy_builtin(size_t *len)
{
    *len = amp_default_policy_size;
    return (const char *)amp_default_policy;
}

/* ---- The program ------------------------------------------------------------ */

/* The NT_GNU_BUILD_ID descriptor in a note area of len bytes. */
static int
amp_note_build_id(const unsigned char *notes, size_t len, unsigned char *out,
                  size_t cap, size_t *out_len)
{
    size_t at = 0;

    while (at + sizeof(ElfW(Nhdr)) <= len) {
        ElfW(Nhdr) nh;
        size_t name_at, desc_at, next;

        memcpy(&nh, notes + at, sizeof nh);
        name_at = at + sizeof nh;
        desc_at = name_at + ((nh.n_namesz + 3u) & ~3u);
        next = desc_at + ((nh.n_descsz + 3u) & ~3u);
        if (next > len || desc_at + nh.n_descsz > len)
            return -1;
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
            memcmp(notes + name_at, "GNU", 4) == 0) {
            if (nh.n_descsz == 0 || nh.n_descsz > cap)
                return -1;
            memcpy(out, notes + desc_at, nh.n_descsz);
            *out_len = nh.n_descsz;
            return 0;
        }
        at = next;
    }
    return -1;
}

/* The main program is the first object dl_iterate_phdr reports. */
static int
amp_self_build_id(struct dl_phdr_info *info, size_t size, void *data)
{
    struct amp_program *prog = data;
    int i;

    for (i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

        if (ph->p_type == PT_NOTE &&
            amp_note_build_id((const unsigned char *)(info->dlpi_addr +
                                                      ph->p_vaddr),
                              ph->p_memsz, prog->build_id,
                              sizeof prog->build_id,
                              &prog->build_id_len) == 0)
            break;
    }
    return 1;
}

void
amp_program_self(struct amp_program *prog)
{
    ssize_t n;
    const char *slash;

    memset(prog, 0, sizeof *prog);
    n = readlink("/proc/self/exe", prog->exe, sizeof prog->exe - 1);
    prog->exe[n > 0 ? n : 0] = '\0';
    slash = strrchr(prog->exe, '/');
    prog->name = slash ? slash + 1 : prog->exe;
    dl_iterate_phdr(amp_self_build_id, prog);
}

void
amp_program_of(const char *path, struct amp_program *prog)
{
    const char *slash;

    memset(prog, 0, sizeof *prog);
    if (!realpath(path, prog->exe))
        snprintf(prog->exe, sizeof prog->exe, "%s", path);
    slash = strrchr(prog->exe, '/');
    prog->name = slash ? slash + 1 : prog->exe;
    if (amp_elf_build_id(prog->exe, prog->build_id, sizeof prog->build_id,
                         &prog->build_id_len) != 0)
        prog->build_id_len = 0;
}

int
amp_elf_build_id(const char *path, unsigned char *out, size_t cap,
                 size_t *len)
{
    Elf *elf = NULL;
    Elf_Scn *scn = NULL;
    int fd, rc = -1;

    if (elf_version(EV_CURRENT) == EV_NONE)
        return -1;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    elf = elf_begin(fd, ELF_C_READ, NULL);
    while (elf && rc != 0 && (scn = elf_nextscn(elf, scn)) != NULL) {
        GElf_Shdr sh;
        Elf_Data *data;

        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
            continue;
        data = elf_getdata(scn, NULL);
        if (data && data->d_buf)
            rc = amp_note_build_id(data->d_buf, data->d_size, out, cap, len);
    }
    if (elf)
        elf_end(elf);
    close(fd);
    return rc;
}

/* ---- Match lines ---------------------------------------------------------- */

static int
amp_match_fits(const struct amp_policy *p, const struct amp_policy_match *m,
               const struct amp_program *prog)
{
    if (m->exe) {
        const char *glob = p->strings + m->exe;
        const char *name = strchr(glob, '/') ? prog->exe : prog->name;

        if (!name || fnmatch(glob, name, 0) != 0)
            return 0;
    }
    if (m->build_id_len)
        return m->build_id_len == prog->build_id_len &&
               memcmp(m->build_id, prog->build_id, m->build_id_len) == 0;
    return 1;
}

int
amp_policy_accepting_line(const struct amp_policy *p,
                          const struct amp_program *prog)
{
    int i;

    if (p->nmatches == 0)
        return 0;
    for (i = 0; i < p->nmatches; i++)
        if (amp_match_fits(p, &p->matches[i], prog))
            return p->matches[i].line;
    return -1;
}

int
amp_policy_applies(const struct amp_policy *p,
                   const struct amp_program *prog)
{
    return amp_policy_accepting_line(p, prog) >= 0;
}

/* ---- The search ------------------------------------------------------------- */

static int
amp_policy_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

#define AMP_DIR_MAX_FILES 256

/* The program's name in messages. */
static const char *
amp_prog_name(const struct amp_program *prog)
{
    return prog->name && prog->name[0] ? prog->name : "this program";
}

/* Adds a file passed over to the trail. */
static void
amp_skip(struct amp_policy_found *found, const char *path,
         enum amp_policy_source source, const struct amp_policy_error *err)
{
    struct amp_policy_skipped *s;

    found->nskipped_broken += err != NULL;
    if (found->nskipped++ >= AMP_POLICY_SKIPPED_MAX)
        return;
    s = &found->skipped[found->nskipped - 1];
    memset(s, 0, sizeof *s);
    snprintf(s->path, sizeof s->path, "%.*s", (int)sizeof s->path - 1,
             path);
    s->source = source;
    if (err) {
        s->broken = 1;
        s->error_line = err->line;
        s->error_col = err->col;
        snprintf(s->error_message, sizeof s->error_message, "%s",
                 err->message);
    }
}

/* "; skipped, with an error but not for NAME: FILE, ..." for the why
 * line when the search passed over broken files; else nothing. */
static void
amp_why_skipped(struct amp_policy_found *found,
                const struct amp_program *prog)
{
    size_t len = strlen(found->why);
    int i, n = found->nskipped < AMP_POLICY_SKIPPED_MAX
                   ? found->nskipped
                   : AMP_POLICY_SKIPPED_MAX;
    const char *sep = "";

    if (found->nskipped_broken == 0 || len >= sizeof found->why)
        return;
    len += (size_t)snprintf(found->why + len, sizeof found->why - len,
                            "; skipped, with an error but not for %.100s:",
                            amp_prog_name(prog));
    for (i = 0; i < n && len < sizeof found->why; i++) {
        if (!found->skipped[i].broken)
            continue;
        len += (size_t)snprintf(found->why + len, sizeof found->why - len,
                                "%s %s", sep, found->skipped[i].path);
        sep = ",";
    }
}

/* How the chosen file accepts the program, for its why line. */
static void
amp_why_accept(const struct amp_policy_found *found,
               const struct amp_program *prog, char *out, size_t cap)
{
    switch (found->accept) {
    case AMP_ACCEPT_LINE:
        snprintf(out, cap, "its match line %d accepts %.100s",
                 found->match_line, amp_prog_name(prog));
        break;
    case AMP_ACCEPT_NO_MATCH_LINE:
        snprintf(out, cap, "it has no match line, so it applies to every "
                 "program");
        break;
    case AMP_ACCEPT_UNREADABLE:
        snprintf(out, cap, "its match lines cannot be read (%.300s), so it "
                 "applies to every program", found->match_error.text);
        break;
    default:
        snprintf(out, cap, "its match lines are not consulted");
        break;
    }
}

/* Tries one file: 1 when it applies to prog (found filled; broken or
 * not), 0 when the search goes on past it (added to the trail). */
static int
amp_find_try(const char *path, const char *dir,
             enum amp_policy_source source, const struct amp_program *prog,
             struct amp_policy *p, struct amp_policy_found *found)
{
    struct amp_policy_error err, match_err;
    char accept[480];
    int matches_read = 0, line;

    if (amp_policy_load_matches(path, p, &err, &matches_read, &match_err) ==
        AMP_OK) {
        line = amp_policy_accepting_line(p, prog);
        if (line < 0) {
            amp_skip(found, path, source, NULL);
            return 0;
        }
        found->broken = 0;
    } else {
        line = matches_read ? amp_policy_accepting_line(p, prog) : 0;
        if (line < 0) {
            amp_skip(found, path, source, &err);
            return 0;
        }
        found->broken = 1;
        found->error = err;
    }
    found->source = source;
    snprintf(found->path, sizeof found->path, "%s", path);
    found->match_line = line;
    found->accept = line > 0 ? AMP_ACCEPT_LINE
                    : matches_read || !found->broken ? AMP_ACCEPT_NO_MATCH_LINE
                                                     : AMP_ACCEPT_UNREADABLE;
    if (found->accept == AMP_ACCEPT_UNREADABLE)
        found->match_error = match_err;
    amp_why_accept(found, prog, accept, sizeof accept);
    if (found->broken)
        snprintf(found->why, sizeof found->why, "%.200s has an error: "
                 "nothing is converted (%.300s); %.200s", path,
                 found->error.text, accept);
    else
        snprintf(found->why, sizeof found->why, "%.300s: the first policy "
                 "in %.150s that applies to %.60s: %.200s", path, dir,
                 amp_prog_name(prog), accept);
    amp_why_skipped(found, prog);
    return 1;
}

/* Tries the *.policy files of dir in name order: 1 when one applies
 * (found filled, broken or not), 0 when none does. */
static int
amp_find_in_dir(const char *dir, enum amp_policy_source source,
                const struct amp_program *prog, struct amp_policy *p,
                struct amp_policy_found *found)
{
    static char names[AMP_DIR_MAX_FILES][256];
    char *sorted[AMP_DIR_MAX_FILES];
    char path[4096];
    struct dirent *de;
    DIR *d = opendir(dir);
    int n = 0, i;

    if (!d)
        return 0;
    while ((de = readdir(d)) != NULL && n < AMP_DIR_MAX_FILES) {
        size_t len = strlen(de->d_name);

        if (de->d_name[0] == '.' || len < 8 || len >= sizeof names[0] ||
            strcmp(de->d_name + len - 7, ".policy") != 0)
            continue;
        memcpy(names[n], de->d_name, len + 1);
        sorted[n] = names[n];
        n++;
    }
    closedir(d);
    qsort(sorted, (size_t)n, sizeof *sorted, amp_policy_name_cmp);
    for (i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, sorted[i]);
        if (amp_find_try(path, dir, source, prog, p, found))
            return 1;
    }
    return 0;
}

/* Each ':'-separated entry of list + "/ampshim/policies". */
static int
amp_find_in_list(const char *list, enum amp_policy_source source,
                 const struct amp_program *prog, struct amp_policy *p,
                 struct amp_policy_found *found)
{
    char dir[4096];

    while (list && *list) {
        const char *end = strchr(list, ':');
        size_t len = end ? (size_t)(end - list) : strlen(list);

        /* XDG: relative entries are invalid and ignored. */
        if (len > 0 && list[0] == '/' && len + 18 < sizeof dir) {
            snprintf(dir, sizeof dir, "%.*s/ampshim/policies", (int)len,
                     list);
            if (amp_find_in_dir(dir, source, prog, p, found))
                return 1;
        }
        list = end ? end + 1 : NULL;
    }
    return 0;
}

static void
amp_find_builtin(struct amp_policy *p, struct amp_policy_found *found,
                 const char *why)
{
    size_t len;
    const char *text = amp_policy_builtin(&len);

    found->source = AMP_SOURCE_BUILTIN;
    found->accept = AMP_ACCEPT_NOT_CONSULTED;
    found->path[0] = '\0';
    found->broken = amp_policy_parse(text, len, "<built-in>", p,
                                     &found->error) != AMP_OK;
    snprintf(found->why, sizeof found->why, "the built-in default policy: "
             "%s", why);
}

void
amp_policy_find(amp_getenv_fn getenv_fn, const struct amp_program *prog,
                struct amp_policy *p, struct amp_policy_found *found)
{
    const char *env = getenv_fn("AMPSHIM_POLICY");
    const char *home, *config_home, *config_dirs;
    char user[4096];

    memset(found, 0, sizeof *found);
    if (env && *env) {
        found->source = AMP_SOURCE_ENV;
        snprintf(found->path, sizeof found->path, "%s", env);
        if (amp_policy_load(env, p, &found->error) != AMP_OK) {
            found->broken = 1;
            snprintf(found->why, sizeof found->why, "AMPSHIM_POLICY=%.300s "
                     "has an error: nothing is converted (%.400s)", env,
                     found->error.text);
        } else {
            snprintf(found->why, sizeof found->why, "AMPSHIM_POLICY=%.600s "
                     "(match lines are not consulted)", env);
        }
        return;
    }
    config_home = getenv_fn("XDG_CONFIG_HOME");
    home = getenv_fn("HOME");
    user[0] = '\0';
    if (config_home && config_home[0] == '/')
        snprintf(user, sizeof user, "%s", config_home);
    else if (home && home[0] == '/')
        snprintf(user, sizeof user, "%s/.config", home);
    if (user[0] && amp_find_in_list(user, AMP_SOURCE_USER, prog, p, found))
        return;
    config_dirs = getenv_fn("XDG_CONFIG_DIRS");
    if (!config_dirs || !*config_dirs)
        config_dirs = "/etc/xdg";
    if (amp_find_in_list(config_dirs, AMP_SOURCE_SYSTEM, prog, p, found) ||
        amp_find_in_dir("/etc/ampshim/policies", AMP_SOURCE_SYSTEM, prog, p,
                        found))
        return;
    amp_find_builtin(p, found, "no AMPSHIM_POLICY and no file in the "
                     "policy directories matches this program");
    amp_why_skipped(found, prog);
}
