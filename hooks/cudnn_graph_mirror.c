/* The program's backend descriptors as it set them: cudnn_graph_mirror.h.
 *
 * One map from a descriptor's address to a fixed-size record: its type,
 * its generation and its attributes, each a (name, type, count) and its
 * bytes in the record's own space. An attribute set again replaces the
 * last; one that does not fit is dropped (its reads go to cuDNN). A
 * descriptor attribute keeps each element's generation after the
 * elements, to tell a live child from a stale address. The map never
 * evicts: a full map holds no new descriptor, and a record leaves only
 * when its descriptor is destroyed (or another is created at its
 * address). */
#include "cudnn_graph_mirror.h"

#include "base/log.h"
#include "base/lru.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

/* Attributes a descriptor holds, and their bytes: a tensor's eight, a
 * variant pack of a dozen tensors, a graph of 16 operations. */
#define AMP_MIRROR_ATTRS 16
#define AMP_MIRROR_BYTES 640

struct amp_mirror_attr {
    int32_t name, type;
    int64_t count;
    uint32_t off, bytes;
};

struct amp_mirror_desc {
    uint64_t gen;
    int32_t type;
    uint32_t nattr, used;
    cudnnBackendDescriptor_t origin; /* the operation graph it builds */
    uint64_t origin_gen;
    struct amp_mirror_attr attr[AMP_MIRROR_ATTRS];
    unsigned char data[AMP_MIRROR_BYTES];
};

static pthread_mutex_t amp_mirror_lock = PTHREAD_MUTEX_INITIALIZER;
static struct amp_lru amp_mirror_map; /* descriptor -> amp_mirror_desc */
static int amp_mirror_tried;          /* set up once: a failure stays */
static uint64_t amp_mirror_next_gen = 1;
static int amp_mirror_full_told;

/* The bytes of one element of an attribute type the shim reads; 0 for
 * the types it never reads back (not held). */
static size_t
amp_mirror_element_size(cudnnBackendAttributeType_t type)
{
    switch (type) {
    case CUDNN_TYPE_BOOLEAN:
        return sizeof(bool);
    case CUDNN_TYPE_DATA_TYPE:
    case CUDNN_TYPE_CONVOLUTION_MODE:
    case CUDNN_TYPE_TENSOR_REORDERING_MODE:
    case CUDNN_TYPE_POINTWISE_MODE:
    case CUDNN_TYPE_HEUR_MODE:
        return sizeof(int32_t); /* the enumerations */
    case CUDNN_TYPE_FLOAT:
        return sizeof(float);
    case CUDNN_TYPE_INT64:
    case CUDNN_TYPE_DOUBLE:
        return 8;
    case CUDNN_TYPE_HANDLE:
    case CUDNN_TYPE_VOID_PTR:
    case CUDNN_TYPE_BACKEND_DESCRIPTOR:
        return sizeof(void *);
    default:
        return 0;
    }
}

/* The record of d, the lock held; NULL when not held. */
static struct amp_mirror_desc *
amp_mirror_find(cudnnBackendDescriptor_t d)
{
    if (!d || !amp_mirror_tried)
        return NULL;
    return amp_lru_find(&amp_mirror_map, &d);
}

/* amp_lru_evict_fn: a record leaves only with its descriptor. */
static int
amp_mirror_keep(void *value, void *arg)
{
    (void)value;
    (void)arg;
    return 0;
}

void
amp_mirror_created(cudnnBackendDescriptor_t d,
                   cudnnBackendDescriptorType_t type)
{
    struct amp_mirror_desc *r;

    if (!d)
        return;
    pthread_mutex_lock(&amp_mirror_lock);
    if (!amp_mirror_tried) {
        amp_mirror_tried = 1;
        amp_lru_init(&amp_mirror_map, AMP_MIRROR_DESCS, sizeof d, sizeof *r);
    }
    amp_lru_remove(&amp_mirror_map, &d); /* one destroyed unseen */
    r = amp_mirror_map.count < amp_mirror_map.capacity
            ? amp_lru_add(&amp_mirror_map, &d, amp_mirror_keep, NULL)
            : NULL;
    if (r) {
        r->gen = amp_mirror_next_gen++;
        r->type = (int32_t)type;
    } else if (!amp_mirror_full_told) {
        amp_mirror_full_told = 1;
        amp_log(AMP_LOG_DEBUG,
                "cuDNN descriptors: %d held, more are read from cuDNN",
                AMP_MIRROR_DESCS);
    }
    pthread_mutex_unlock(&amp_mirror_lock);
}

void
amp_mirror_destroyed(cudnnBackendDescriptor_t d)
{
    pthread_mutex_lock(&amp_mirror_lock);
    if (amp_mirror_tried)
        amp_lru_remove(&amp_mirror_map, &d);
    pthread_mutex_unlock(&amp_mirror_lock);
}

/* The generation of d, the lock held; 0 when not held. */
static uint64_t
amp_mirror_gen(cudnnBackendDescriptor_t d)
{
    struct amp_mirror_desc *r = amp_mirror_find(d);

    return r ? r->gen : 0;
}

/* What descriptor attribute `name`, child c of generation gen, tells of
 * the operation graph r builds, the lock held: an engine's or heuristics'
 * graph is the child; a configuration's is its engine's, a plan's its
 * configuration's. Taken when set, as cuDNN copies what it is given: the
 * child may be destroyed after. */
static void
amp_mirror_link(struct amp_mirror_desc *r, cudnnBackendAttributeName_t name,
                cudnnBackendDescriptor_t c, uint64_t gen)
{
    const struct amp_mirror_desc *from;

    switch (name) {
    case CUDNN_ATTR_ENGINE_OPERATION_GRAPH:
    case CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH:
        r->origin = c;
        r->origin_gen = gen;
        break;
    case CUDNN_ATTR_ENGINECFG_ENGINE:
    case CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG:
        from = amp_mirror_find(c);
        r->origin = from && from->gen == gen ? from->origin : NULL;
        r->origin_gen = from && from->gen == gen ? from->origin_gen : 0;
        break;
    default:
        break;
    }
}

/* Drops attribute i of r. */
static void
amp_mirror_drop(struct amp_mirror_desc *r, uint32_t i)
{
    r->attr[i] = r->attr[--r->nattr];
}

void
amp_mirror_set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
               cudnnBackendAttributeType_t type, int64_t count,
               const void *elements)
{
    size_t size = amp_mirror_element_size(type), bytes;
    struct amp_mirror_desc *r;
    struct amp_mirror_attr *a = NULL;
    int64_t i;
    uint32_t k;

    pthread_mutex_lock(&amp_mirror_lock);
    r = amp_mirror_find(d);
    if (!r)
        goto out;
    for (k = 0; k < r->nattr && !a; k++)
        if (r->attr[k].name == (int32_t)name)
            a = &r->attr[k];
    /* A descriptor attribute also keeps its elements' generations. */
    bytes = count < 0 || count > AMP_MIRROR_BYTES ? AMP_MIRROR_BYTES + 1
            : type == CUDNN_TYPE_BACKEND_DESCRIPTOR ? 2 * 8 * (size_t)count
                                                    : size * (size_t)count;
    if (size == 0 || (count > 0 && !elements) || bytes > AMP_MIRROR_BYTES) {
        if (a) /* what it held is no longer what the program set */
            amp_mirror_drop(r, (uint32_t)(a - r->attr));
        goto out;
    }
    if (!a || bytes > a->bytes) {
        if (bytes > AMP_MIRROR_BYTES - r->used ||
            (!a && r->nattr == AMP_MIRROR_ATTRS)) {
            if (a)
                amp_mirror_drop(r, (uint32_t)(a - r->attr));
            goto out;
        }
        if (!a)
            a = &r->attr[r->nattr++];
        a->off = r->used;
        r->used += (uint32_t)((bytes + 7) & ~(size_t)7);
    }
    a->name = (int32_t)name;
    a->type = (int32_t)type;
    a->count = count;
    a->bytes = (uint32_t)bytes;
    if (type != CUDNN_TYPE_BACKEND_DESCRIPTOR) {
        if (bytes)
            memcpy(r->data + a->off, elements, bytes);
        goto out;
    }
    for (i = 0; i < count; i++) {
        cudnnBackendDescriptor_t c = ((const cudnnBackendDescriptor_t *)
                                          elements)[i];
        uint64_t gen = amp_mirror_gen(c), at = (uint64_t)(uintptr_t)c;

        memcpy(r->data + a->off + 8 * i, &at, 8);
        memcpy(r->data + a->off + 8 * (count + i), &gen, 8);
        if (count == 1)
            amp_mirror_link(r, name, c, gen);
    }
out:
    pthread_mutex_unlock(&amp_mirror_lock);
}

/* Attribute `name` of r, the lock held; NULL when not held. */
static const struct amp_mirror_attr *
amp_mirror_attr_of(const struct amp_mirror_desc *r,
                   cudnnBackendAttributeName_t name)
{
    uint32_t k;

    for (k = 0; r && k < r->nattr; k++)
        if (r->attr[k].name == (int32_t)name)
            return &r->attr[k];
    return NULL;
}

int
amp_mirror_type(cudnnBackendDescriptor_t d,
                cudnnBackendDescriptorType_t *type)
{
    struct amp_mirror_desc *r;

    pthread_mutex_lock(&amp_mirror_lock);
    r = amp_mirror_find(d);
    if (r)
        *type = (cudnnBackendDescriptorType_t)r->type;
    pthread_mutex_unlock(&amp_mirror_lock);
    return r != NULL;
}

/* Read r of the held descriptor rec (NULL when not held), the lock held. */
static enum amp_mirror_answer
amp_mirror_read_locked(const struct amp_mirror_desc *rec,
                       const struct amp_mirror_read *r)
{
    const struct amp_mirror_attr *a = amp_mirror_attr_of(rec, r->name);
    int64_t max = r->max;

    if (!a || r->type == CUDNN_TYPE_BACKEND_DESCRIPTOR ||
        a->type == CUDNN_TYPE_BACKEND_DESCRIPTOR)
        return AMP_MIRROR_ABSENT; /* descriptors: amp_mirror_children */
    if (a->type != (int32_t)r->type)
        return AMP_MIRROR_REFUSED;
    *r->n = a->count;
    if (max > a->count)
        max = a->count;
    if (max > 0)
        memcpy(r->v, rec->data + a->off,
               (size_t)max * amp_mirror_element_size(r->type));
    return AMP_MIRROR_HELD;
}

enum amp_mirror_answer
amp_mirror_get(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
               cudnnBackendAttributeType_t type, int64_t max, int64_t *n,
               void *v)
{
    struct amp_mirror_read r = { name, type, max, n, v, AMP_MIRROR_ABSENT };

    amp_mirror_get_all(d, &r, 1);
    return r.answer;
}

void
amp_mirror_get_all(cudnnBackendDescriptor_t d, struct amp_mirror_read *r,
                   int count)
{
    const struct amp_mirror_desc *rec;
    int i;

    pthread_mutex_lock(&amp_mirror_lock);
    rec = amp_mirror_find(d);
    for (i = 0; i < count; i++)
        r[i].answer = amp_mirror_read_locked(rec, &r[i]);
    pthread_mutex_unlock(&amp_mirror_lock);
}

enum amp_mirror_answer
amp_mirror_children(cudnnBackendDescriptor_t d,
                    cudnnBackendAttributeName_t name, int64_t max, int64_t *n,
                    cudnnBackendDescriptor_t *child,
                    cudnnBackendDescriptorType_t *type)
{
    const struct amp_mirror_desc *r;
    const struct amp_mirror_attr *a;
    enum amp_mirror_answer answer = AMP_MIRROR_ABSENT;
    int64_t i;

    pthread_mutex_lock(&amp_mirror_lock);
    r = amp_mirror_find(d);
    a = amp_mirror_attr_of(r, name);
    if (!a || a->type != CUDNN_TYPE_BACKEND_DESCRIPTOR || a->count > max)
        goto out;
    for (i = 0; i < a->count; i++) {
        uint64_t at, gen;
        const struct amp_mirror_desc *c;

        memcpy(&at, r->data + a->off + 8 * i, 8);
        memcpy(&gen, r->data + a->off + 8 * (a->count + i), 8);
        child[i] = (cudnnBackendDescriptor_t)(uintptr_t)at;
        c = amp_mirror_find(child[i]);
        if (!c || c->gen != gen)
            goto out; /* not held, or destroyed since */
        type[i] = (cudnnBackendDescriptorType_t)c->type;
    }
    *n = a->count;
    answer = AMP_MIRROR_HELD;
out:
    pthread_mutex_unlock(&amp_mirror_lock);
    return answer;
}

void
amp_mirror_heur_results(cudnnBackendDescriptor_t heur,
                        const cudnnBackendDescriptor_t *cfgs, int64_t n)
{
    const struct amp_mirror_desc *h;
    int64_t i;

    pthread_mutex_lock(&amp_mirror_lock);
    h = amp_mirror_find(heur);
    for (i = 0; h && h->origin && i < n; i++) {
        struct amp_mirror_desc *c = amp_mirror_find(cfgs[i]);

        if (c) {
            c->origin = h->origin;
            c->origin_gen = h->origin_gen;
        }
    }
    pthread_mutex_unlock(&amp_mirror_lock);
}

cudnnBackendDescriptor_t
amp_mirror_origin(cudnnBackendDescriptor_t d, uint64_t *gen)
{
    const struct amp_mirror_desc *r;
    cudnnBackendDescriptor_t graph = NULL;

    *gen = 0;
    pthread_mutex_lock(&amp_mirror_lock);
    r = amp_mirror_find(d);
    if (r) {
        graph = r->origin;
        *gen = r->origin_gen;
    }
    pthread_mutex_unlock(&amp_mirror_lock);
    return graph;
}

uint64_t
amp_mirror_generation(cudnnBackendDescriptor_t d)
{
    uint64_t gen;

    pthread_mutex_lock(&amp_mirror_lock);
    gen = amp_mirror_gen(d);
    pthread_mutex_unlock(&amp_mirror_lock);
    return gen;
}
