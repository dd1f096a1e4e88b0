/* `ampshim calibrate`: runs a program once per candidate mode with every
 * call in shadow mode, reads the reports, and writes the policy that gives
 * each call site the fastest mode within the tolerance. */
#include "base/json.h"
#include "decide/policy.h"
#include "decide/site.h"
#include "decide/symbolize.h"
#include "tool/tool.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char amp_tool_calibrate_help[] =
    "usage: ampshim calibrate [-o FILE] [--modes LIST]\n"
    "                         [--tolerance X[:NORM]]\n"
    "                         [--force] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM under the shim once per candidate mode, every call in\n"
    "shadow mode (the FP32 result, the candidate measured beside it), reads\n"
    "the reports, and writes a policy for PROGRAM (match exe and build-id)\n"
    "that gives each call site (the hooked API, the calling function and\n"
    "its module) the fastest candidate whose largest relative error is\n"
    "within the tolerance and that is faster than FP32; other sites stay\n"
    "fp32. Each rule is annotated with the measured error and speedup of\n"
    "every candidate. Each site's first call is verified at run time.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE  the policy (default PROGRAM.policy, PROGRAM's\n"
    "                     file name, in the working directory)\n"
    "  --modes LIST       candidates, comma-separated (default fp16,bf16,\n"
    "                     tf32,fp16x3,tf32x3,allow-conversion; fp16x3 and\n"
    "                     tf32x3 are a GEMM's only, allow-conversion a\n"
    "                     convolution's)\n"
    "  --tolerance X[:NORM]\n"
    "                     largest relative error a site may show, in NORM:\n"
    "                     max (max |cand - fp32| / max |fp32|, the\n"
    "                     default) or fro (||cand - fp32||_F / ||fp32||_F;\n"
    "                     also frobenius, l2); default AMPSHIM_TOLERANCE,\n"
    "                     else the built-in policy's, 5e-3 (max norm)\n"
    "  --force            replace FILE if it exists\n"
    "  -h, --help         this help\n"
    "\n"
    "Options take their value as --opt VALUE or --opt=VALUE; arguments\n"
    "after PROGRAM are PROGRAM's. PROGRAM must do the same work on every\n"
    "run. Call sites in one function get one rule (their calls together),\n"
    "which names the function as users know it: C++ demangled, without\n"
    "the suffixes compilers give its clones (caller \"app::step(int)\").\n"
    "PROGRAM may be a job launcher (mpirun, mpiexec, srun, torchrun, ...):\n"
    "every process of a run writes its report, their measurements add up\n"
    "to one policy that every rank of the next run decides alike, and the\n"
    "policy is named after the program the reports name\n"
    "(ampshim calibrate -- mpirun -np 4 ./trainer writes trainer.policy).\n"
    "Before the first run the tool checks the options, the AMPSHIM_*\n"
    "settings in the environment, that FILE can be created (its directory\n"
    "exists and is writable, no file is there without --force), that the\n"
    "library is found and that PROGRAM can be run.\n"
    "\n"
    "environment:\n"
    "  AMPSHIM_LIBRARY  the library to preload, as for ampshim run\n"
    "  AMPSHIM_*        the shim's other settings apply to every run;\n"
    "                   AMPSHIM_MODE, AMPSHIM_DISABLE, AMPSHIM_TRACE,\n"
    "                   AMPSHIM_POLICY, AMPSHIM_REPORT and\n"
    "                   AMPSHIM_TOLERANCE (the tolerance when there is no\n"
    "                   --tolerance) are the calibration's own\n"
    "\n"
    "exit status:\n"
    "  0; 1 when a run fails (the program's status is named) or FILE\n"
    "  cannot be written after the runs; 2 on a usage error (an unknown\n"
    "  option, a bad --modes or --tolerance, no PROGRAM); 125 when a check\n"
    "  before the runs fails and nothing ran.\n";

/* The candidates, in the default order; which families each applies to. */
static const struct amp_cal_candidate {
    enum amp_mode mode;
    int gemm, conv;
} amp_cal_candidates[] = {
    {AMP_MODE_FP16, 1, 1},
    {AMP_MODE_BF16, 1, 1},
    {AMP_MODE_TF32, 1, 1},
    {AMP_MODE_FP16X3, 1, 0},
    {AMP_MODE_TF32X3, 1, 0},
    {AMP_MODE_ALLOW_CONVERSION, 0, 1},
};

#define AMP_CAL_MODES \
    ((int)(sizeof amp_cal_candidates / sizeof amp_cal_candidates[0]))
#define AMP_CAL_SITES 1024

/* One candidate measured at one site: sums over its shadow calls. */
struct amp_cal_measure {
    double calls, shadow_calls, fallback, nonfinite;
    double fp32_ms, candidate_ms;
    double max_rel;              /* NAN: never measured */
    double max_fro;              /* in the Frobenius norm; NAN: never */
};

/* A site as a rule can name it: report sites with the same API, caller
 * and module merged. */
struct amp_cal_site {
    char *api, *function, *module; /* function: as users know it (C++
                                      demangled, no compiler suffixes) */
    int conv;
    int merged;                  /* report sites, in the first report */
    double offset;               /* the first one's offset in the module */
    char shape[96];              /* the first shape, and how many */
    int nshapes;
    struct amp_cal_measure m[AMP_CAL_MODES];
};

struct amp_calibration {
    const struct amp_cal_candidate *modes[AMP_CAL_MODES];
    int nmodes;
    double tolerance;
    enum amp_norm norm;          /* the tolerance's */
    struct amp_cal_site sites[AMP_CAL_SITES];
    int nsites;
    char program[256];           /* the report's program name */
    int processes;               /* reports of one run (a job's ranks) */
    char build_id[2 * AMP_POLICY_BUILD_ID_MAX + 1];
    char device[160];
};

struct amp_cal_options {
    const char *out, *modes;
    double tolerance;            /* < 0: AMPSHIM_TOLERANCE's, else the
                                    built-in policy's */
    enum amp_norm norm;
    int force, first;
};

/* ---- Options ---------------------------------------------------------------- */

static int
amp_cal_usage(const char *what, const char *arg)
{
    amp_opt_usage("ampshim calibrate", "%s%s%s", what, arg ? ": " : "",
                  arg ? arg : "");
    return AMP_TOOL_USAGE;
}

/* 0; 1 after --help; 2 after a usage message. */
static int
amp_cal_parse(int argc, char **argv, struct amp_cal_options *o)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"modes", required_argument, NULL, 'M'},
        {"tolerance", required_argument, NULL, 'T'},
        {"force", no_argument, NULL, 'F'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct amp_opt opt = {"ampshim calibrate", "+:o:h", longopts, argc, argv,
                          0};
    int c;

    memset(o, 0, sizeof *o);
    o->tolerance = -1;
    while ((c = amp_opt_next(&opt)) != -1) {
        switch (c) {
        case 'o': o->out = optarg; break;
        case 'M': o->modes = optarg; break;
        case 'F': o->force = 1; break;
        case 'T':
            if (amp_tolerance_parse(optarg, &o->tolerance, &o->norm) !=
                AMP_OK)
                return amp_cal_usage("--tolerance needs a non-negative "
                                     "number with an optional :NORM, NORM "
                                     AMP_NORM_WORDS " (1e-6:fro)", optarg);
            break;
        case 'h':
            printf("%s", amp_tool_calibrate_help);
            return 1;
        default:
            return AMP_TOOL_USAGE;
        }
    }
    if (optind >= argc)
        return amp_cal_usage("no program to run", NULL);
    o->first = optind;
    return 0;
}

/* Fills cal->modes from a comma-separated list; 0 or 2. */
static int
amp_cal_modes(struct amp_calibration *cal, const char *list)
{
    const char *at = list;
    int k;

    cal->nmodes = 0;
    if (!list) {
        for (k = 0; k < AMP_CAL_MODES; k++)
            cal->modes[cal->nmodes++] = &amp_cal_candidates[k];
        return 0;
    }
    while (*at) {
        size_t len = strcspn(at, ",");

        for (k = 0; k < AMP_CAL_MODES; k++) {
            const char *name = amp_mode_name(amp_cal_candidates[k].mode);

            if (strlen(name) == len && strncmp(at, name, len) == 0)
                break;
        }
        if (k == AMP_CAL_MODES)
            return amp_cal_usage("--modes: not a candidate (fp16, bf16, "
                                 "tf32, fp16x3, tf32x3, "
                                 "allow-conversion)", at);
        for (int j = 0; j < cal->nmodes; j++)
            if (cal->modes[j] == &amp_cal_candidates[k])
                return amp_cal_usage("--modes: named twice", at);
        cal->modes[cal->nmodes++] = &amp_cal_candidates[k];
        at += len + (at[len] == ',');
    }
    return cal->nmodes ? 0 : amp_cal_usage("--modes: empty", NULL);
}

/* The tolerance when --tolerance names none: AMPSHIM_TOLERANCE's (as
 * the shim takes it), else the built-in policy's. */
static void
amp_cal_default_tolerance(struct amp_calibration *cal)
{
    static struct amp_policy p;
    struct amp_policy_error err;
    size_t len;
    const char *text = amp_policy_builtin(&len);
    const char *env = getenv("AMPSHIM_TOLERANCE");

    cal->tolerance = 5e-3;
    cal->norm = AMP_NORM_MAX;
    if (env && *env &&
        amp_tolerance_parse(env, &cal->tolerance, &cal->norm) == AMP_OK)
        return;
    if (amp_policy_parse(text, len, "<built-in>", &p, &err) == AMP_OK &&
        p.set.tolerance >= 0) {
        cal->tolerance = p.set.tolerance;
        cal->norm = p.set.tolerance_norm;
    }
}

/* ---- The runs --------------------------------------------------------------- */

/* Writes the policy that shadows every call in mode c into path. */
static int
amp_cal_write_run_policy(const char *path, const struct amp_cal_candidate *c)
{
    FILE *f = fopen(path, "w");
    const char *name = amp_mode_name(c->mode);

    if (!f)
        return -1;
    fprintf(f, "# ampshim calibrate: every call measured in %s\n", name);
    if (c->gemm)
        fprintf(f, "rule shadow:%s when gemm\n", name);
    if (c->conv)
        fprintf(f, "rule shadow:%s when conv\n", name);
    fprintf(f, "default fp32\n");
    return fclose(f) == 0 ? 0 : -1;
}

static struct amp_cal_site *
amp_cal_site(struct amp_calibration *cal, const char *api,
             const char *function, const char *module)
{
    struct amp_cal_site *s;
    int i, k;

    for (i = 0; i < cal->nsites; i++) {
        s = &cal->sites[i];
        if (strcmp(s->api, api) == 0 && strcmp(s->function, function) == 0 &&
            strcmp(s->module, module) == 0)
            return s;
    }
    if (cal->nsites == AMP_CAL_SITES)
        return NULL;
    s = &cal->sites[cal->nsites];
    s->api = strdup(api);
    s->function = strdup(function);
    s->module = strdup(module);
    if (!s->api || !s->function || !s->module) {
        free(s->api);
        free(s->function);
        free(s->module);
        return NULL;
    }
    for (k = 0; k < AMP_CAL_MODES; k++) {
        s->m[k].max_rel = NAN;
        s->m[k].max_fro = NAN;
    }
    s->offset = NAN;
    cal->nsites++;
    return s;
}

static double
amp_cal_num(const struct amp_json *obj, const char *key)
{
    return amp_json_num(amp_json_get(obj, key), NAN);
}

static double
amp_cal_count(const struct amp_json *obj, const char *key)
{
    double v = amp_cal_num(obj, key);

    return isnan(v) ? 0 : v;
}

/* The program and device, from the first report. */
static void
amp_cal_program(struct amp_calibration *cal, const struct amp_json *root)
{
    const struct amp_json *prog = amp_json_get(root, "program");
    const struct amp_json *dev = amp_json_get(root, "device");
    const char *name = amp_json_str(amp_json_get(prog, "name"));
    const char *id = amp_json_str(amp_json_get(prog, "build_id"));
    const char *dname = amp_json_str(amp_json_get(dev, "reported_name"));
    const char *timing = amp_json_str(amp_json_get(dev, "timing"));

    snprintf(cal->program, sizeof cal->program, "%s", name ? name : "");
    snprintf(cal->build_id, sizeof cal->build_id, "%s", id ? id : "");
    snprintf(cal->device, sizeof cal->device, "%s, times %s",
             dname ? dname : "no device", timing ? timing : "not taken");
}

/* Adds one report site's measurements of candidate k. */
static int
amp_cal_add(struct amp_calibration *cal, int k, const struct amp_json *js,
            int first)
{
    const char *api = amp_json_str(amp_json_get(js, "api"));
    const char *function = amp_json_str(amp_json_get(js, "function"));
    char name[AMP_SYMBOL_LEN] = "";
    const char *module = amp_json_str(amp_json_get(js, "module"));
    const char *family = amp_json_str(amp_json_get(js, "family"));
    const struct amp_json *time = amp_json_get(js, "time");
    const struct amp_json *err = amp_json_get(js, "errors");
    const struct amp_json *shapes = amp_json_get(js, "shapes");
    struct amp_cal_site *s;
    struct amp_cal_measure *m;
    double rel;

    if (!api || !family)
        return -1;
    /* An older shim's report names a C++ caller by its symbol: the
     * function as users know it, the same for every clone of it. */
    if (function)
        amp_function_name(function, name, sizeof name);
    s = amp_cal_site(cal, api, name, module ? module : "");
    if (!s)
        return -1;
    s->conv = strcmp(family, "conv") == 0;
    if (first) {
        if (!s->merged++)
            s->offset = amp_cal_num(js, "offset");
        if (shapes && shapes->type == AMP_JSON_ARRAY && shapes->count) {
            const char *sh = amp_json_str(amp_json_get(&shapes->items[0],
                                                       "shape"));

            if (!s->nshapes)
                snprintf(s->shape, sizeof s->shape, "%s", sh ? sh : "?");
            s->nshapes += (int)shapes->count;
        }
    }
    m = &s->m[k];
    m->calls += amp_cal_count(js, "calls");
    m->fallback += amp_cal_count(js, "fallback");
    m->shadow_calls += amp_cal_count(err, "shadow_calls");
    m->nonfinite += amp_cal_count(err, "nonfinite");
    m->fp32_ms += amp_cal_count(time, "shadow_fp32_ms");
    m->candidate_ms += amp_cal_count(time, "shadow_candidate_ms");
    rel = amp_cal_num(err, "max_rel");
    if (!isnan(rel) && (isnan(m->max_rel) || rel > m->max_rel))
        m->max_rel = rel;
    rel = amp_cal_num(err, "max_fro");
    if (!isnan(rel) && (isnan(m->max_fro) || rel > m->max_fro))
        m->max_fro = rel;
    return 0;
}

/* Reads the report of candidate k's run; 0, or -1 after a message. */
static int
amp_cal_read(struct amp_calibration *cal, int k, const char *path,
             int first)
{
    const struct amp_json *sites;
    struct amp_json *root;
    char err[160];
    size_t len, i;
    char *text = amp_tool_read_file(path, &len);
    int rc = -1;

    if (!text) {
        fprintf(stderr, "ampshim calibrate: the program wrote no report "
                "(%s: %s)\n", path, strerror(errno));
        return -1;
    }
    root = amp_json_parse(text, len, err, sizeof err);
    free(text);
    sites = amp_json_get(root, "sites");
    if (!sites || sites->type != AMP_JSON_ARRAY) {
        fprintf(stderr, "ampshim calibrate: %s: not a report%s%s\n", path,
                root ? "" : ": ", root ? "" : err);
        goto out;
    }
    if (first)
        amp_cal_program(cal, root);
    for (i = 0; i < sites->count; i++) {
        if (amp_cal_add(cal, k, &sites->items[i], first) != 0) {
            fprintf(stderr, "ampshim calibrate: %s: site %zu unreadable or "
                    "more than %d sites\n", path, i, AMP_CAL_SITES);
            goto out;
        }
    }
    rc = 0;
out:
    amp_json_free(root);
    return rc;
}

/* Reads every report one run left in dir (one per process: a launcher's
 * ranks each write theirs) and removes them; 0, or -1 after a message.
 * The ranks' measurements add up: one policy for every rank. */
static int
amp_cal_read_run(struct amp_calibration *cal, int k, const char *dir,
                 int first_run, int read_them)
{
    struct dirent **names = NULL;
    char path[4400];
    int n = scandir(dir, &names, NULL, alphasort), i, read = 0, rc = 0;

    for (i = 0; i < n; i++) {
        size_t len = strlen(names[i]->d_name);

        if (len > 5 && strcmp(names[i]->d_name + len - 5, ".json") == 0) {
            snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
            if (rc == 0 && read_them &&
                amp_cal_read(cal, k, path, first_run && read == 0) != 0)
                rc = -1;
            read++;
            unlink(path);
        }
        free(names[i]);
    }
    free(names);
    if (rc == 0 && read_them && read == 0) {
        fprintf(stderr, "ampshim calibrate: the program wrote no report "
                "(in %s)\n", dir);
        rc = -1;
    }
    if (rc == 0 && first_run)
        cal->processes = read;
    return rc;
}

/* One run per candidate, its reports read; 0 or 1. */
static int
amp_cal_measure(struct amp_calibration *cal, const char *library,
                char **argv, const char *dir)
{
    char policy[4200], run_dir[4200], report[4300];
    struct amp_run_options o;
    int i, k, status, failed = 0;

    for (i = 0; i < cal->nmodes; i++) {
        const char *name = amp_mode_name(cal->modes[i]->mode);

        k = (int)(cal->modes[i] - amp_cal_candidates);
        snprintf(policy, sizeof policy, "%s/%s.policy", dir, name);
        snprintf(run_dir, sizeof run_dir, "%s/%s", dir, name);
        /* One report per process of the run. */
        snprintf(report, sizeof report, "%s/%%p.json", run_dir);
        if (amp_cal_write_run_policy(policy, cal->modes[i]) != 0 ||
            mkdir(run_dir, 0700) != 0) {
            fprintf(stderr, "ampshim calibrate: %s: %s\n", run_dir,
                    strerror(errno));
            return 1;
        }
        fprintf(stderr, "ampshim calibrate: run %d of %d: every call in "
                "shadow:%s\n", i + 1, cal->nmodes, name);
        memset(&o, 0, sizeof o);
        o.policy = policy;
        o.report = report;
        status = amp_tool_launch(&o, library, argv);
        if (status != 0)
            fprintf(stderr, "ampshim calibrate: %s exited with status %d "
                    "in the run measuring %s\n", argv[0], status, name);
        failed = amp_cal_read_run(cal, k, run_dir, i == 0,
                                  status == 0) != 0;
        rmdir(run_dir);
        unlink(policy);
        if (status != 0 || failed)
            return 1;
    }
    return 0;
}

/* ---- Choosing --------------------------------------------------------------- */

static int
amp_cal_applies(const struct amp_cal_candidate *c, const struct amp_cal_site *s)
{
    return s->conv ? c->conv : c->gemm;
}

static double
amp_cal_speedup(const struct amp_cal_measure *m)
{
    return m->candidate_ms > 0 ? m->fp32_ms / m->candidate_ms : NAN;
}

/* Why candidate c cannot be chosen at s, or NULL when it can. */
static const char *
amp_cal_rejects(const struct amp_calibration *cal,
                const struct amp_cal_measure *m, char *buf, size_t cap)
{
    double speedup = amp_cal_speedup(m);
    /* The measurement as the shim's comparison takes it (site.h); the
     * non-finite elements have their own reason above. */
    struct amp_gemm_error e = {.max_rel = m->max_rel,
                               .fro_rel = m->max_fro};

    if (m->shadow_calls <= 0 || m->shadow_calls < m->calls) {
        snprintf(buf, cap, "measured on %.0f of %.0f calls (%.0f fell "
                 "back)", m->shadow_calls, m->calls, m->fallback);
        return buf;
    }
    if (m->nonfinite > 0) {
        snprintf(buf, cap, "%.0f non-finite elements where FP32 had none",
                 m->nonfinite);
        return buf;
    }
    if (amp_error_over(&e, cal->tolerance, cal->norm)) {
        snprintf(buf, cap, "error over the tolerance %g%s", cal->tolerance,
                 cal->norm == AMP_NORM_FRO ? " (Frobenius norm)" : "");
        return buf;
    }
    if (isnan(speedup) || speedup <= 1.0)
        return "not faster than fp32";
    return NULL;
}

/* The index in cal->modes of s's choice, or -1 for fp32. */
static int
amp_cal_choose(const struct amp_calibration *cal, const struct amp_cal_site *s)
{
    char buf[128];
    double best_speedup = 0;
    int i, best = -1;

    for (i = 0; i < cal->nmodes; i++) {
        const struct amp_cal_measure *m =
            &s->m[cal->modes[i] - amp_cal_candidates];

        if (!amp_cal_applies(cal->modes[i], s) ||
            amp_cal_rejects(cal, m, buf, sizeof buf))
            continue;
        if (amp_cal_speedup(m) > best_speedup) {
            best_speedup = amp_cal_speedup(m);
            best = i;
        }
    }
    return best;
}

/* ---- Writing ---------------------------------------------------------------- */

/* s as a quoted glob that matches s: the glob's special bytes escaped,
 * and '?' (any one byte) for each byte a quoted glob cannot hold (a
 * quote, a control character); -1 when it does not fit. A C++ name's
 * "::", "()", "<>", ", " and "#" need nothing: a quoted glob holds
 * anything but a quote. */
static int
amp_cal_glob(char *out, size_t cap, const char *s)
{
    size_t n = 0;

    if (cap < 3 || !*s)
        return -1;
    out[n++] = '"';
    for (; *s; s++) {
        if (n + 4 > cap)
            return -1;
        if (*s == '"' || (unsigned char)*s < 0x20) {
            out[n++] = '?';
            continue;
        }
        if (strchr("*?[\\", *s))
            out[n++] = '\\';
        out[n++] = *s;
    }
    out[n++] = '"';
    out[n] = '\0';
    return 0;
}

static void
amp_cal_write_header(FILE *f, const struct amp_calibration *cal,
                     char **argv)
{
    char date[32], glob[300];
    time_t now = time(NULL);
    struct tm tm;
    int i;

    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC",
             gmtime_r(&now, &tm));
    fprintf(f, "# Written by `ampshim calibrate` on %s for:\n#  ", date);
    for (i = 0; argv[i]; i++)
        fprintf(f, " %s", argv[i]);
    fprintf(f, "\n# Device: %s.\n", cal->device);
    if (cal->processes > 1)
        fprintf(f, "# Measured over the %d processes of each run (a job's "
                "ranks), added up:\n# one policy for every rank.\n",
                cal->processes);
    fprintf(f, "# Candidates:");
    for (i = 0; i < cal->nmodes; i++)
        fprintf(f, " %s", amp_mode_name(cal->modes[i]->mode));
    fprintf(f, ", each measured in one run with every call in shadow mode"
            ".\n"
            "# Each site gets the fastest candidate whose largest relative "
            "error (%s\n"
            "# norm) is within the tolerance, with no non-finite element "
            "FP32 did not\n"
            "# have, and that is faster than FP32 (the FP32 originals' time "
            "over the\n"
            "# candidate's); else fp32. verify 1: a site's first call is "
            "measured again\n"
            "# and the site stays FP32 if its error exceeds the tolerance."
            "\n\n", cal->norm == AMP_NORM_FRO ? "Frobenius" : "max");
    if (amp_cal_glob(glob, sizeof glob, cal->program) == 0)
        fprintf(f, "match exe %s%s%s\n", glob,
                cal->build_id[0] ? " build-id " : "", cal->build_id);
    else if (cal->build_id[0])
        fprintf(f, "match build-id %s\n", cal->build_id);
    fprintf(f, "set tolerance %g %s\n", cal->tolerance,
            amp_norm_name(cal->norm));
}

/* What the rules written so far leave of a policy's bounds. */
struct amp_cal_room {
    int rules;                   /* rule lines */
    size_t strings;              /* bytes of globs, NULs included */
};

/* How a site is named on stdout and in the policy's comments: its label,
 * "FUNCTION (MODULE+0xOFFSET)", or for report sites merged into one
 * "FUNCTION (MODULE, N call sites)". */
static const char *
amp_cal_label(const struct amp_cal_site *s, char *buf, size_t cap)
{
    const char *base = strrchr(s->module, '/');

    if (s->merged <= 1 || !s->function[0] || !s->module[0])
        return amp_symbol_label(buf, cap, s->function, s->module,
                                isnan(s->offset) ? 0
                                                 : (uintptr_t)s->offset);
    snprintf(buf, cap, "%s (%s, %d call sites)", s->function,
             base && base[1] ? base + 1 : s->module, s->merged);
    return buf;
}

/* The site's rule, when its caller and module can be named and it fits
 * a line and the room left; 0, or -1 with why not. */
static int
amp_cal_rule(char *line, size_t cap, const struct amp_cal_site *s,
             const char *action, struct amp_cal_room *room,
             const char **why)
{
    const char *base = strrchr(s->module, '/');
    char fglob[2 * AMP_SYMBOL_LEN + 3], mglob[600];
    size_t bytes;
    int n;

    base = base ? base + 1 : s->module;
    *why = "the caller or its module cannot be named";
    if (!s->function[0] || !base[0] ||
        amp_cal_glob(fglob, sizeof fglob, s->function) != 0 ||
        amp_cal_glob(mglob, sizeof mglob, base) != 0)
        return -1;
    n = snprintf(line, cap, "rule %s when symbol %s and caller %s and "
                 "module %s", action, s->api, fglob, mglob);
    /* The glob texts without their quotes, each with its NUL. */
    bytes = strlen(s->api) + 1 + strlen(fglob) - 1 + strlen(mglob) - 1;
    *why = "the caller's name is longer than a policy line allows";
    if (n < 0 || (size_t)n >= cap || n > AMP_POLICY_MAX_LINE)
        return -1;
    *why = "the policy's bounds (rules, bytes of globs) are reached";
    if (room->rules == 0 || bytes > room->strings)
        return -1;
    room->rules--;
    room->strings -= bytes;
    return 0;
}

static void
amp_cal_write_site(FILE *f, const struct amp_calibration *cal,
                   const struct amp_cal_site *s, struct amp_cal_room *room)
{
    char label[AMP_LABEL_LEN], line[AMP_POLICY_MAX_LINE + 2], action[48];
    char why[128];
    const char *no_rule;
    int chosen = amp_cal_choose(cal, s), i;
    const struct amp_cal_measure *best =
        chosen >= 0 ? &s->m[cal->modes[chosen] - amp_cal_candidates] : NULL;

    fprintf(f, "\n# %s in %s: %.0f calls, %d shape%s (%s)", s->api,
            amp_cal_label(s, label, sizeof label),
            s->m[cal->modes[0] - amp_cal_candidates].calls, s->nshapes,
            s->nshapes == 1 ? "" : "s", s->shape);
    if (s->merged > 1)
        fprintf(f, ", %d call sites in the function", s->merged);
    fprintf(f, "\n");
    if (chosen < 0)
        fprintf(f, "#   %-16s chosen: no candidate is within the tolerance "
                "and faster\n", "fp32");
    for (i = 0; i < cal->nmodes; i++) {
        const struct amp_cal_measure *m =
            &s->m[cal->modes[i] - amp_cal_candidates];
        const char *no = amp_cal_rejects(cal, m, why, sizeof why);

        if (!amp_cal_applies(cal->modes[i], s))
            continue;
        if (!no && i != chosen) {
            snprintf(why, sizeof why, "slower than %s",
                     amp_mode_name(cal->modes[chosen]->mode));
            no = why;
        }
        fprintf(f, "#   %-16s %s: max rel error %.3e, fro rel error %.3e, "
                "speedup %.4f%s%s\n",
                amp_mode_name(cal->modes[i]->mode),
                i == chosen ? "chosen" : "rejected", m->max_rel, m->max_fro,
                amp_cal_speedup(m), no ? ": " : "", no ? no : "");
    }
    snprintf(action, sizeof action, "%s%s",
             chosen >= 0 ? amp_mode_name(cal->modes[chosen]->mode) : "fp32",
             best ? " verify 1" : "");
    if (amp_cal_rule(line, sizeof line, s, action, room, &no_rule) != 0) {
        fprintf(f, "#   no rule: %s; the default decides\n", no_rule);
        return;
    }
    fprintf(f, "%s\n", line);
}

/* Writes the policy to path (never replacing a file unless force): 0 or
 * 1. */
static int
amp_cal_write(const struct amp_calibration *cal, char **argv,
              const char *path, int force)
{
    static struct amp_policy check;
    struct amp_policy_error perr;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    /* The header's exe glob takes at most 256 bytes of globs. */
    struct amp_cal_room room = {AMP_POLICY_MAX_RULES,
                                AMP_POLICY_STRINGS - 256};
    int fd, i, rc = 1;

    if (!f)
        return 1;
    amp_cal_write_header(f, cal, argv);
    for (i = 0; i < cal->nsites; i++)
        amp_cal_write_site(f, cal, &cal->sites[i], &room);
    fprintf(f, "\ndefault fp32\n");
    if (fclose(f) != 0)
        goto out;
    if (amp_policy_parse(text, len, path, &check, &perr) != AMP_OK) {
        fprintf(stderr, "ampshim calibrate: internal error, the policy "
                "does not parse: %s\n", perr.text);
        goto out;
    }
    fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW |
                        (force ? O_TRUNC : O_EXCL), 0644);
    if (fd < 0 || write(fd, text, len) != (ssize_t)len) {
        fprintf(stderr, "ampshim calibrate: %s: %s\n", path,
                strerror(errno));
        if (fd >= 0)
            close(fd);
        goto out;
    }
    rc = close(fd) == 0 ? 0 : 1;
out:
    free(text);
    return rc;
}

/* One line per site on stdout. */
static void
amp_cal_print(const struct amp_calibration *cal, const char *path)
{
    int i;

    printf("%-40s %-26s %-16s %10s %10s\n", "site", "api", "mode", "speedup",
           "max rel");
    for (i = 0; i < cal->nsites; i++) {
        const struct amp_cal_site *s = &cal->sites[i];
        int chosen = amp_cal_choose(cal, s);
        const struct amp_cal_measure *m =
            chosen >= 0 ? &s->m[cal->modes[chosen] - amp_cal_candidates]
                        : NULL;
        char name[AMP_LABEL_LEN];

        /* A label wider than its column gets a line of its own, whole. */
        if (strlen(amp_cal_label(s, name, sizeof name)) > 40) {
            printf("%s\n", name);
            name[0] = '\0';
        }
        printf("%-40s %-26s %-16s %10.4f %10.3e\n", name, s->api,
               m ? amp_mode_name(cal->modes[chosen]->mode) : "fp32",
               m ? amp_cal_speedup(m) : 1.0, m ? m->max_rel : 0.0);
    }
    printf("wrote %s (tolerance %g, %s norm); run with: ampshim run "
           "--policy %s -- ...\n", path, cal->tolerance,
           cal->norm == AMP_NORM_FRO ? "Frobenius" : "max", path);
}

/* 1 when program is a job launcher (mpirun, srun, torchrun, ...): the
 * program it starts is known only from the reports. */
static int
amp_cal_launcher(const char *program)
{
    static const char *const launchers[] = {
        "mpirun", "mpiexec", "orterun", "prterun", "srun", "torchrun",
        "jsrun", "aprun", NULL,
    };
    const char *base = strrchr(program, '/');
    int i;

    base = base ? base + 1 : program;
    for (i = 0; launchers[i]; i++)
        if (strcmp(base, launchers[i]) == 0)
            return 1;
    return 0;
}

/* Everything that can be checked before the first run; 0, or -1 after
 * a message (nothing ran). */
static int
amp_cal_check(const struct amp_cal_options *o, const char *program,
              const char *out, char *library, size_t cap)
{
    const char *log = getenv("AMPSHIM_LOG_FILE");
    char found[PATH_MAX], label[PATH_MAX + 64];

    /* The runs' settings are the calibration's own. */
    unsetenv("AMPSHIM_MODE");
    unsetenv("AMPSHIM_DISABLE");
    unsetenv("AMPSHIM_TRACE");
    unsetenv("AMPSHIM_POLICY");
    unsetenv("AMPSHIM_REPORT");
    /* A tolerance would demote sites in the runs, which measure every
     * call: the calibration applies it to the measurements instead. */
    unsetenv("AMPSHIM_TOLERANCE");
    if (amp_tool_check_settings("ampshim calibrate") != 0 ||
        amp_tool_library(library, cap) != 0 ||
        amp_tool_find_program(program, found, sizeof found) != 0)
        return -1;
    if (log && *log) {
        snprintf(label, sizeof label, "AMPSHIM_LOG_FILE=%s", log);
        if (amp_tool_check_output("ampshim calibrate", label, log,
                                  AMP_OUTPUT_APPEND) != 0)
            return -1;
    }
    /* Under a launcher the policy is named after the program the
     * reports name, once they are in: only its directory now. */
    if (!out[0])
        return amp_tool_check_output("ampshim calibrate",
                                     "the working directory", ".",
                                     AMP_OUTPUT_DIRECTORY);
    snprintf(label, sizeof label, "%s %s", o->out ? "-o" : "the policy",
             out);
    /* FILE is written as named: no escapes. */
    return amp_tool_check_file("ampshim calibrate", label, out,
                               o->force ? AMP_OUTPUT_REPLACE
                                        : AMP_OUTPUT_NEW);
}

int
amp_tool_calibrate(int argc, char **argv)
{
    static struct amp_calibration cal;
    struct amp_cal_options o;
    char dir[] = "/tmp/ampshim-calibrate-XXXXXX", out[4096];
    char library[PATH_MAX];
    const char *base;
    int rc = amp_cal_parse(argc, argv, &o), i;

    if (rc != 0)
        return rc == 1 ? 0 : AMP_TOOL_USAGE;
    memset(&cal, 0, sizeof cal);
    if (amp_cal_modes(&cal, o.modes) != 0)
        return AMP_TOOL_USAGE;
    if (o.tolerance >= 0) {
        cal.tolerance = o.tolerance;
        cal.norm = o.norm;
    } else {
        amp_cal_default_tolerance(&cal);
    }
    base = strrchr(argv[o.first], '/');
    snprintf(out, sizeof out, "%s", o.out ? o.out : "");
    if (!o.out && !amp_cal_launcher(argv[o.first]))
        snprintf(out, sizeof out, "%s.policy",
                 base ? base + 1 : argv[o.first]);
    /* Before minutes of runs. */
    if (amp_cal_check(&o, argv[o.first], out, library, sizeof library) != 0)
        return AMP_RUN_FAILED;
    if (!mkdtemp(dir)) {
        perror("ampshim calibrate: mkdtemp");
        return 1;
    }
    rc = amp_cal_measure(&cal, library, argv + o.first, dir);
    if (rc == 0 && cal.nsites == 0) {
        fprintf(stderr, "ampshim calibrate: %s made no call the shim "
                "hooks: nothing to calibrate\n", argv[o.first]);
        rc = 1;
    }
    if (rc == 0 && !out[0]) {
        /* PROGRAM was a launcher: the policy takes the name of the
         * program its ranks ran. */
        snprintf(out, sizeof out, "%s.policy", cal.program);
        if (amp_tool_check_file("ampshim calibrate", "the policy", out,
                                o.force ? AMP_OUTPUT_REPLACE
                                        : AMP_OUTPUT_NEW) != 0)
            rc = 1;
    }
    if (rc == 0)
        rc = amp_cal_write(&cal, argv + o.first, out, o.force);
    if (rc == 0)
        amp_cal_print(&cal, out);
    if (rmdir(dir) != 0)
        fprintf(stderr, "ampshim calibrate: %s left behind\n", dir);
    for (i = 0; i < cal.nsites; i++) {
        free(cal.sites[i].api);
        free(cal.sites[i].function);
        free(cal.sites[i].module);
    }
    return rc;
}
