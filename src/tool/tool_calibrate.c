/* `ampshim calibrate`: runs a program once per candidate mode with every
 * call in shadow mode, reads the reports, and writes the policy that gives
 * each call site the fastest mode within the tolerance. */
#include "base/json.h"
#include "decide/policy.h"
#include "decide/site.h"
#include "decide/symbolize.h"
#include "device/device.h"
#include "tool/tool.h"
#include "tool/tool_report.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char amp_tool_calibrate_help[] =
    "usage: ampshim calibrate [-o FILE] [--modes LIST]\n"
    "                         [--tolerance X[:NORM]] [--min-speedup X]\n"
    "                         [--force] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM under the shim once per candidate mode, every call in\n"
    "shadow mode (the FP32 result, the candidate measured beside it), reads\n"
    "the reports, and writes a policy for PROGRAM (match exe and build-id)\n"
    "that gives each call site (the hooked API, the calling function and\n"
    "its module) the fastest candidate whose largest relative error is\n"
    "within the tolerance and that is at least --min-speedup as fast as\n"
    "FP32; other sites stay fp32. Where a site's shapes choose differently,\n"
    "each shape gets a rule of its own (m, n, k, ... of a GEMM; N, C, H,\n"
    "W, K, R, S, groups of a convolution). Each rule is annotated with the\n"
    "measured error and speedup of every candidate. Each site's first call\n"
    "is verified at run time. A candidate the program has no call for\n"
    "(fp16x3 without an FP32 GEMM, allow-conversion without an FP32\n"
    "convolution) is not run, nor is bf16x9 on a GPU without cuBLAS's\n"
    "BF16x9 emulation (compute capability 10.0 and 10.3 have it). A line on stderr per run, and one summary\n"
    "on stdout: a line per site (per shape where they differ).\n"
    "\n"
    "options:\n"
    "  -o, --output FILE  the policy (default PROGRAM.policy, PROGRAM's\n"
    "                     file name, in the working directory)\n"
    "  --modes LIST       candidates, comma-separated (default fp16,bf16,\n"
    "                     tf32,fp16x3,tf32x3,bf16x9,allow-conversion;\n"
    "                     fp16x3, tf32x3 and bf16x9 are a GEMM's only,\n"
    "                     allow-conversion a convolution's)\n"
    "  --tolerance X[:NORM]\n"
    "                     largest relative error a site may show, in NORM:\n"
    "                     max (max |cand - fp32| / max |fp32|, the\n"
    "                     default) or fro (||cand - fp32||_F / ||fp32||_F;\n"
    "                     also frobenius, l2); default AMPSHIM_TOLERANCE,\n"
    "                     else the built-in policy's, 5e-3 (max norm)\n"
    "  --min-speedup X    the least speedup over FP32 worth converting\n"
    "                     for (default 1.05: 5 % faster; below it a site\n"
    "                     stays fp32, its results FP32's)\n"
    "  --force            replace FILE if it exists\n"
    "  -h, --help         this help\n"
    "\n"
    "Options take their value as --opt VALUE or --opt=VALUE; arguments\n"
    "after PROGRAM are PROGRAM's. PROGRAM must do the same work on every\n"
    "run. Call sites in one function share their rules (their calls\n"
    "together), which name the function as users know it: C++ demangled,\n"
    "without the suffixes compilers give its clones (caller\n"
    "\"app::step(int)\").\n"
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
    "                   AMPSHIM_POLICY, AMPSHIM_REPORT, AMPSHIM_SUMMARY and\n"
    "                   AMPSHIM_TOLERANCE (the tolerance when there is no\n"
    "                   --tolerance) are the calibration's own\n"
    "\n"
    "signals:\n"
    "  SIGTERM goes to the program of the run, as under ampshim run; the\n"
    "  calibration then stops, writes no policy and removes its temporary\n"
    "  directory (in $TMPDIR, else /tmp).\n"
    "\n"
    "exit status:\n"
    "  0; 1 when a run fails (the program's status is named) or FILE\n"
    "  cannot be written after the runs; 2 on a usage error (an unknown\n"
    "  option, a bad --modes, --tolerance or --min-speedup, no PROGRAM);\n"
    "  125 when a check before the runs fails and nothing ran; 143 after\n"
    "  SIGTERM.\n";

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
    {AMP_MODE_BF16X9, 1, 0},
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

/* A shape at a site: its measurements, and the conditions that select
 * it in a rule ("m == 1024 and n == 768 and ..."; "" when its dimensions
 * cannot be named: an older report's, a convolution of other than 4
 * dimensions). */
struct amp_cal_shape {
    char text[96];
    char cond[200];
    struct amp_cal_measure m[AMP_CAL_MODES];
};

/* A site as a rule can name it: report sites with the same API, caller
 * and module merged. */
struct amp_cal_site {
    char *api, *function, *module; /* function: as users know it (C++
                                      demangled, no compiler suffixes) */
    int conv;
    int merged;                  /* report sites, in the first report */
    double offset;               /* the first one's offset in the module */
    struct amp_cal_shape *shapes; /* distinct shapes, by text */
    int nshapes;
    struct amp_cal_measure m[AMP_CAL_MODES];
};

struct amp_calibration {
    const struct amp_cal_candidate *modes[AMP_CAL_MODES];
    int nmodes;
    int skipped[AMP_CAL_MODES];  /* by index of modes: not run, the
                                    program has no call it applies to
                                    (AMP_CAL_NO_CALL) or the GPU cannot
                                    run it (AMP_CAL_NO_EMULATION) */
    double min_speedup;          /* below it a candidate is not worth
                                    converting for */
    double tolerance;
    enum amp_norm norm;          /* the tolerance's */
    struct amp_cal_site sites[AMP_CAL_SITES];
    int nsites;
    char program[256];           /* the report's program name */
    int processes;               /* reports of one run (a job's ranks) */
    char build_id[2 * AMP_POLICY_BUILD_ID_MAX + 1];
    char device[160];
    char gpu[128];               /* the first report's device's name */
    int bf16x9;                  /* the first report's device has BF16x9
                                    emulation (compute capability 10.0 or
                                    10.3) */
};

enum { AMP_CAL_RUN = 0, AMP_CAL_NO_CALL, AMP_CAL_NO_EMULATION };

struct amp_cal_options {
    const char *out, *modes;
    double tolerance;            /* < 0: AMPSHIM_TOLERANCE's, else the
                                    built-in policy's */
    enum amp_norm norm;
    double min_speedup;
    int force, first;
};

/* The least speedup over FP32 a candidate must show to convert: below
 * it, a few per cent of gain (within a measurement's noise on a GPU) is
 * not worth results that differ from FP32's. */
#define AMP_CAL_MIN_SPEEDUP 1.05

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
        {"min-speedup", required_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct amp_opt opt = {"ampshim calibrate", "+:o:h", longopts, argc, argv,
                          0};
    int c;

    memset(o, 0, sizeof *o);
    o->tolerance = -1;
    o->min_speedup = AMP_CAL_MIN_SPEEDUP;
    while ((c = amp_opt_next(&opt)) != -1) {
        char *end;

        switch (c) {
        case 'o': o->out = optarg; break;
        case 'S':
            errno = 0;
            o->min_speedup = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(o->min_speedup >= 1.0) ||
                !isfinite(o->min_speedup))
                return amp_cal_usage("--min-speedup needs a number of at "
                                     "least 1 (1.05: 5 % faster than "
                                     "FP32)", optarg);
            break;
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
                                 "tf32, fp16x3, tf32x3, bf16x9, "
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
    const char *cc = amp_json_str(amp_json_get(dev, "compute_capability"));
    int major, minor;

    snprintf(cal->program, sizeof cal->program, "%s", name ? name : "");
    snprintf(cal->build_id, sizeof cal->build_id, "%s", id ? id : "");
    snprintf(cal->device, sizeof cal->device, "%s, times %s",
             dname ? dname : "no device", timing ? timing : "not taken");
    snprintf(cal->gpu, sizeof cal->gpu, "%s", dname ? dname : "no device");
    cal->bf16x9 = cc && sscanf(cc, "%d.%d", &major, &minor) == 2 &&
                  amp_cc_bf16x9(major, minor);
}

/* Adds the measurements of obj (a report site or shape) to m. */
static void
amp_cal_measure_add(struct amp_cal_measure *m, const struct amp_json *obj)
{
    const struct amp_json *time = amp_json_get(obj, "time");
    const struct amp_json *err = amp_json_get(obj, "errors");
    double rel;

    m->calls += amp_cal_count(obj, "calls");
    m->fallback += amp_cal_count(obj, "fallback");
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
}

/* The conditions that select a shape by its report dims, into buf; ""
 * when they cannot be named. */
static void
amp_cal_shape_cond(const struct amp_json *dims, int conv, char *buf,
                   size_t cap)
{
    const struct amp_json *x = amp_json_get(dims, "x");
    const struct amp_json *w = amp_json_get(dims, "w");
    const char *ta = amp_json_str(amp_json_get(dims, "transa"));
    const char *tb = amp_json_str(amp_json_get(dims, "transb"));
    const char *epi = amp_json_str(amp_json_get(dims, "epilogue"));
    double g = amp_cal_num(dims, "groups");
    int n;

    buf[0] = '\0';
    if (!conv) {
        if (!ta || !tb || isnan(amp_cal_num(dims, "m")) ||
            isnan(amp_cal_num(dims, "n")) || isnan(amp_cal_num(dims, "k")) ||
            isnan(amp_cal_num(dims, "batch")))
            return;
        n = snprintf(buf, cap, "m == %.0f and n == %.0f and k == %.0f and "
                     "batch == %.0f and transa == %c and transb == %c%s%s",
                     amp_cal_num(dims, "m"), amp_cal_num(dims, "n"),
                     amp_cal_num(dims, "k"), amp_cal_num(dims, "batch"),
                     ta[0] == 'T' ? 't' : 'n', tb[0] == 'T' ? 't' : 'n',
                     epi ? " and epilogue == " : "", epi ? epi : "");
    } else {
        /* The policy's fields name a 4-dimensional convolution only. */
        if (!x || x->type != AMP_JSON_ARRAY || x->count != 4 || !w ||
            w->type != AMP_JSON_ARRAY || w->count != 4 || isnan(g))
            return;
        n = snprintf(buf, cap, "N == %.0f and C == %.0f and H == %.0f and "
                     "W == %.0f and K == %.0f and R == %.0f and S == %.0f "
                     "and groups == %.0f", x->items[0].number,
                     x->items[1].number, x->items[2].number,
                     x->items[3].number, w->items[0].number,
                     w->items[2].number, w->items[3].number, g);
    }
    if (n < 0 || (size_t)n >= cap)
        buf[0] = '\0';
}

/* The shape of s with the text of obj, made on first sight; NULL out of
 * memory. */
static struct amp_cal_shape *
amp_cal_shape(struct amp_cal_site *s, const struct amp_json *obj)
{
    const char *text = amp_or(amp_json_str(amp_json_get(obj, "shape")), "?");
    struct amp_cal_shape *sh, *more;
    int i, k;

    for (i = 0; i < s->nshapes; i++)
        if (strcmp(s->shapes[i].text, text) == 0)
            return &s->shapes[i];
    more = realloc(s->shapes, ((size_t)s->nshapes + 1) * sizeof *more);
    if (!more)
        return NULL;
    s->shapes = more;
    sh = &s->shapes[s->nshapes++];
    memset(sh, 0, sizeof *sh);
    snprintf(sh->text, sizeof sh->text, "%s", text);
    amp_cal_shape_cond(amp_json_get(obj, "dims"), s->conv, sh->cond,
                       sizeof sh->cond);
    for (k = 0; k < AMP_CAL_MODES; k++) {
        sh->m[k].max_rel = NAN;
        sh->m[k].max_fro = NAN;
    }
    return sh;
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
    const struct amp_json *shapes = amp_json_get(js, "shapes");
    struct amp_cal_site *s;
    size_t i;

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
    if (first && !s->merged++)
        s->offset = amp_cal_num(js, "offset");
    amp_cal_measure_add(&s->m[k], js);
    for (i = 0; shapes && shapes->type == AMP_JSON_ARRAY &&
                i < shapes->count; i++) {
        struct amp_cal_shape *sh = amp_cal_shape(s, &shapes->items[i]);

        if (!sh)
            return -1;
        amp_cal_measure_add(&sh->m[k], &shapes->items[i]);
    }
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

/* SIGTERM to the tool: passed on to the program during a run (as
 * `ampshim run` does); the calibration then stops, writes no policy and
 * removes its temporary files. */
static volatile sig_atomic_t amp_cal_stop;

static void
amp_cal_on_term(int sig)
{
    amp_cal_stop = sig;
}

/* Removes dir and the files in it (a run's reports, a snapshot's
 * temporary file). */
static void
amp_cal_remove_dir(const char *dir)
{
    char path[4400];
    struct dirent *e;
    DIR *d = opendir(dir);

    if (d) {
        while ((e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
                snprintf(path, sizeof path, "%s/%s", dir, e->d_name) <
                    (int)sizeof path)
                unlink(path);
        closedir(d);
    }
    rmdir(dir);
}

/* 1 when the program made a call candidate c applies to, by the sites
 * of the runs so far. */
static int
amp_cal_usable(const struct amp_calibration *cal,
               const struct amp_cal_candidate *c)
{
    int i;

    for (i = 0; i < cal->nsites; i++)
        if (cal->sites[i].conv ? c->conv : c->gemm)
            return 1;
    return 0;
}

/* The shapes of the sites so far. */
static int
amp_cal_nshapes(const struct amp_calibration *cal)
{
    int i, n = 0;

    for (i = 0; i < cal->nsites; i++)
        n += cal->sites[i].nshapes;
    return n;
}

/* One run per candidate the program can use, its reports read; 0 or 1.
 * A line on stderr per run; the shim's own exit tables are left out. */
static int
amp_cal_measure(struct amp_calibration *cal, const char *library,
                char **argv, const char *dir)
{
    char policy[4200], run_dir[4200], report[4300];
    struct amp_run_options o;
    struct timespec t0, t1;
    int i, k, status, failed = 0, runs = 0;

    /* The summary at the end stands for the runs' exit tables. */
    setenv("AMPSHIM_SUMMARY", "0", 1);
    for (i = 0; i < cal->nmodes; i++) {
        const char *name = amp_mode_name(cal->modes[i]->mode);

        k = (int)(cal->modes[i] - amp_cal_candidates);
        /* After the first run the sites say which families the program
         * calls: a candidate for none of them would measure nothing. */
        if (amp_cal_stop)
            return 1;
        if (runs && !amp_cal_usable(cal, cal->modes[i])) {
            cal->skipped[i] = AMP_CAL_NO_CALL;
            fprintf(stderr, "ampshim calibrate: %s skipped: the program "
                    "made no %s\n", name,
                    cal->modes[i]->gemm ? "FP32 GEMM" : "FP32 convolution");
            continue;
        }
        /* Where cuBLAS would compute FP32 under its name, the shim keeps
         * every call FP32: the run would measure nothing. */
        if (runs && cal->modes[i]->mode == AMP_MODE_BF16X9 && !cal->bf16x9) {
            cal->skipped[i] = AMP_CAL_NO_EMULATION;
            fprintf(stderr, "ampshim calibrate: bf16x9 skipped: %s has no "
                    "BF16x9 emulation (compute capability 10.0 and 10.3 "
                    "have it)\n", cal->gpu);
            continue;
        }
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
        fprintf(stderr, "ampshim calibrate: run %d of at most %d: every "
                "call in shadow:%s\n", runs + 1, cal->nmodes - i + runs,
                name);
        memset(&o, 0, sizeof o);
        o.policy = policy;
        o.report = report;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        status = amp_tool_launch(&o, library, argv);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (amp_tool_launch_signal())
            amp_cal_stop = amp_tool_launch_signal();
        if (status != 0)
            fprintf(stderr, "ampshim calibrate: %s exited with status %d "
                    "in the run measuring %s\n", argv[0], status, name);
        failed = amp_cal_read_run(cal, k, run_dir, runs == 0,
                                  status == 0 && !amp_cal_stop) != 0;
        amp_cal_remove_dir(run_dir);
        unlink(policy);
        if (status != 0 || failed || amp_cal_stop)
            return 1;
        runs++;
        fprintf(stderr, "ampshim calibrate: %s measured: %d site%s, %d "
                "shape%s, %.1f s\n", name, cal->nsites,
                cal->nsites == 1 ? "" : "s", amp_cal_nshapes(cal),
                amp_cal_nshapes(cal) == 1 ? "" : "s",
                (double)(t1.tv_sec - t0.tv_sec) +
                    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    }
    return 0;
}

/* ---- Choosing --------------------------------------------------------------- */

/* 1 when mode i of cal->modes was run and applies to a site of the
 * family conv. */
static int
amp_cal_applies(const struct amp_calibration *cal, int i, int conv)
{
    return !cal->skipped[i] &&
           (conv ? cal->modes[i]->conv : cal->modes[i]->gemm);
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
    if (speedup < cal->min_speedup) {
        snprintf(buf, cap, "a gain of %.1f %%, below the %.0f %% worth "
                 "converting for", 100.0 * (speedup - 1.0),
                 100.0 * (cal->min_speedup - 1.0));
        return buf;
    }
    return NULL;
}

/* The index in cal->modes of the choice for measurements m (a site's or
 * a shape's, by candidate) of the family conv, or -1 for fp32. */
static int
amp_cal_choose(const struct amp_calibration *cal,
               const struct amp_cal_measure *m, int conv)
{
    char buf[128];
    double best_speedup = 0;
    int i, best = -1;

    for (i = 0; i < cal->nmodes; i++) {
        const struct amp_cal_measure *c =
            &m[cal->modes[i] - amp_cal_candidates];

        if (!amp_cal_applies(cal, i, conv) ||
            amp_cal_rejects(cal, c, buf, sizeof buf))
            continue;
        if (amp_cal_speedup(c) > best_speedup) {
            best_speedup = amp_cal_speedup(c);
            best = i;
        }
    }
    return best;
}

/* 1 when the shapes of s get rules of their own: their choices differ
 * and every one of them can be named in a rule. */
static int
amp_cal_per_shape(const struct amp_calibration *cal,
                  const struct amp_cal_site *s)
{
    int i, differ = 0, first;

    if (s->nshapes < 2)
        return 0;
    first = amp_cal_choose(cal, s->shapes[0].m, s->conv);
    for (i = 0; i < s->nshapes; i++) {
        if (!s->shapes[i].cond[0])
            return 0;
        differ |= amp_cal_choose(cal, s->shapes[i].m, s->conv) != first;
    }
    return differ;
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
        if (!cal->skipped[i])
            fprintf(f, " %s", amp_mode_name(cal->modes[i]->mode));
    fprintf(f, ", each measured in one run with every call in shadow mode"
            ".\n");
    for (i = 0; i < cal->nmodes; i++)
        if (cal->skipped[i] == AMP_CAL_NO_CALL)
            fprintf(f, "# Not run: %s (the program made no %s).\n",
                    amp_mode_name(cal->modes[i]->mode),
                    cal->modes[i]->gemm ? "FP32 GEMM" : "FP32 convolution");
        else if (cal->skipped[i] == AMP_CAL_NO_EMULATION)
            fprintf(f, "# Not run: %s (the GPU has no BF16x9 emulation).\n",
                    amp_mode_name(cal->modes[i]->mode));
    fprintf(f, "# Each site gets the fastest candidate whose largest "
            "relative error (%s\n"
            "# norm) is within the tolerance, with no non-finite element "
            "FP32 did not\n"
            "# have, and that is at least %.2fx as fast as FP32 (the FP32 "
            "originals'\n"
            "# time over the candidate's): a smaller gain is not worth "
            "results that\n"
            "# differ from FP32's (--min-speedup); else fp32. Where the "
            "shapes of a site\n"
            "# choose differently, each shape gets a rule of its own, and "
            "shapes not\n"
            "# measured stay fp32. verify 1: a site's first call is "
            "measured again\n"
            "# and the site stays FP32 if its error exceeds the tolerance."
            "\n\n", cal->norm == AMP_NORM_FRO ? "Frobenius" : "max",
            cal->min_speedup);
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

/* The site's rule (of one of its shapes, with cond, its conditions),
 * when its caller and module can be named and it fits a line and the
 * room left; 0, or -1 with why not. */
static int
amp_cal_rule(char *line, size_t cap, const struct amp_cal_site *s,
             const char *cond, const char *action,
             struct amp_cal_room *room, const char **why)
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
                 "module %s%s%s", action, s->api, fglob, mglob,
                 cond ? " and " : "", cond ? cond : "");
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

/* The comment lines of measurements m (a site's or a shape's), each
 * candidate's figures and why it was rejected; the index of the
 * choice in cal->modes, or -1 for fp32. */
static int
amp_cal_write_choice(FILE *f, const struct amp_calibration *cal,
                     const struct amp_cal_measure *ms, int conv,
                     const char *indent)
{
    int chosen = amp_cal_choose(cal, ms, conv), i;
    char why[128];

    if (chosen < 0)
        fprintf(f, "#%s%-16s chosen: no candidate is within the tolerance "
                "and fast enough\n", indent, "fp32");
    for (i = 0; i < cal->nmodes; i++) {
        const struct amp_cal_measure *m =
            &ms[cal->modes[i] - amp_cal_candidates];
        const char *no = amp_cal_rejects(cal, m, why, sizeof why);

        if (!amp_cal_applies(cal, i, conv))
            continue;
        if (!no && i != chosen) {
            snprintf(why, sizeof why, "slower than %s",
                     amp_mode_name(cal->modes[chosen]->mode));
            no = why;
        }
        fprintf(f, "#%s%-16s %s: max rel error %.3e, fro rel error %.3e, "
                "speedup %.4f%s%s\n", indent,
                amp_mode_name(cal->modes[i]->mode),
                i == chosen ? "chosen" : "rejected", m->max_rel, m->max_fro,
                amp_cal_speedup(m), no ? ": " : "", no ? no : "");
    }
    return chosen;
}

/* The rule of a choice (cond: a shape's conditions, or NULL), or why
 * there is none. */
static void
amp_cal_write_rule(FILE *f, const struct amp_calibration *cal,
                   const struct amp_cal_site *s, const char *cond,
                   int chosen, struct amp_cal_room *room)
{
    char line[AMP_POLICY_MAX_LINE + 2], action[48];
    const char *no_rule;

    snprintf(action, sizeof action, "%s%s",
             chosen >= 0 ? amp_mode_name(cal->modes[chosen]->mode) : "fp32",
             chosen >= 0 ? " verify 1" : "");
    if (amp_cal_rule(line, sizeof line, s, cond, action, room, &no_rule) !=
        0) {
        fprintf(f, "#   no rule: %s; the default decides\n", no_rule);
        return;
    }
    fprintf(f, "%s\n", line);
}

static void
amp_cal_write_site(FILE *f, const struct amp_calibration *cal,
                   const struct amp_cal_site *s, struct amp_cal_room *room)
{
    char label[AMP_LABEL_LEN];
    int i;

    fprintf(f, "\n# %s in %s: %.0f calls, %d shape%s (%s%s)", s->api,
            amp_cal_label(s, label, sizeof label),
            s->m[cal->modes[0] - amp_cal_candidates].calls, s->nshapes,
            s->nshapes == 1 ? "" : "s", s->nshapes ? s->shapes[0].text : "?",
            s->nshapes > 1 ? ", ..." : "");
    if (s->merged > 1)
        fprintf(f, ", %d call sites in the function", s->merged);
    fprintf(f, "\n");
    if (!amp_cal_per_shape(cal, s)) {
        amp_cal_write_rule(f, cal, s, NULL,
                           amp_cal_write_choice(f, cal, s->m, s->conv, "   "),
                           room);
        return;
    }
    fprintf(f, "#   its shapes choose differently: a rule per shape\n");
    for (i = 0; i < s->nshapes; i++) {
        const struct amp_cal_shape *sh = &s->shapes[i];

        fprintf(f, "#   shape %s: %.0f calls\n", sh->text,
                sh->m[cal->modes[0] - amp_cal_candidates].calls);
        amp_cal_write_rule(f, cal, s, sh->cond,
                           amp_cal_write_choice(f, cal, sh->m, s->conv,
                                                "     "),
                           room);
    }
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

/* One summary line: a site's (or, indented, a shape's) choice. */
static void
amp_cal_print_line(const struct amp_calibration *cal, const char *name,
                   const char *api, const struct amp_cal_measure *ms,
                   int conv)
{
    int chosen = amp_cal_choose(cal, ms, conv);
    const struct amp_cal_measure *m =
        chosen >= 0 ? &ms[cal->modes[chosen] - amp_cal_candidates] : NULL;

    /* A label wider than its column gets a line of its own, whole. */
    if (strlen(name) > 40) {
        printf("%s\n", name);
        name = "";
    }
    printf("%-40s %-26s %-16s %10.4f %10.3e\n", name, api,
           m ? amp_mode_name(cal->modes[chosen]->mode) : "fp32",
           m ? amp_cal_speedup(m) : 1.0, m ? m->max_rel : 0.0);
}

/* The summary on stdout: one line per site, and under a site whose
 * shapes choose differently one per shape. */
static void
amp_cal_print(const struct amp_calibration *cal, const char *path)
{
    char name[AMP_LABEL_LEN], shape[128];
    int i, j;

    printf("%-40s %-26s %-16s %10s %10s\n", "site / shape", "api", "mode",
           "speedup", "max rel");
    for (i = 0; i < cal->nsites; i++) {
        const struct amp_cal_site *s = &cal->sites[i];
        int per_shape = amp_cal_per_shape(cal, s);

        amp_cal_label(s, name, sizeof name);
        if (per_shape)
            printf("%s\n", name);
        else
            amp_cal_print_line(cal, name, s->api, s->m, s->conv);
        for (j = 0; j < s->nshapes; j++) {
            if (!per_shape)
                break;
            snprintf(shape, sizeof shape, "  %s", s->shapes[j].text);
            amp_cal_print_line(cal, shape, s->api, s->shapes[j].m, s->conv);
        }
    }
    printf("wrote %s (tolerance %g, %s norm; at least %.2fx as fast as "
           "FP32 to convert); run with: ampshim run --policy %s -- ...\n",
           path, cal->tolerance,
           cal->norm == AMP_NORM_FRO ? "Frobenius" : "max",
           cal->min_speedup, path);
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
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX], out[4096];
    struct sigaction sa, old_term;
    char library[PATH_MAX];
    const char *base;
    int rc = amp_cal_parse(argc, argv, &o), i;

    if (rc != 0)
        return rc == 1 ? 0 : AMP_TOOL_USAGE;
    memset(&cal, 0, sizeof cal);
    if (amp_cal_modes(&cal, o.modes) != 0)
        return AMP_TOOL_USAGE;
    cal.min_speedup = o.min_speedup;
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
    /* $TMPDIR, else /tmp, as mktemp(1) takes it. */
    snprintf(dir, sizeof dir, "%s/ampshim-calibrate-XXXXXX",
             tmp && *tmp == '/' ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "ampshim calibrate: %s: %s\n", dir, strerror(errno));
        return 1;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = amp_cal_on_term;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    amp_cal_stop = 0;
    sigaction(SIGTERM, &sa, &old_term);
    rc = amp_cal_measure(&cal, library, argv + o.first, dir);
    if (amp_cal_stop) {
        fprintf(stderr, "ampshim calibrate: stopped by %s: no policy "
                "written\n", strsignal(amp_cal_stop));
        rc = 128 + amp_cal_stop;
    }
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
    sigaction(SIGTERM, &old_term, NULL);
    for (i = 0; i < cal.nsites; i++) {
        free(cal.sites[i].shapes);
        free(cal.sites[i].api);
        free(cal.sites[i].function);
        free(cal.sites[i].module);
    }
    return rc;
}
