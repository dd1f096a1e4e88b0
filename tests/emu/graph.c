/* The emulated driver's graphs: executable graphs and their launches, the
 * nodes a capture records (by the driver's node types), child graph nodes,
 * and user objects. The rules are those of the CUDA 13 driver API
 * reference (the documentation in cuda.h):
 * - cuGraphInstantiate: "If hGraph contains any allocation or free nodes,
 *   there can be at most one executable graph in existence for that graph
 *   at a time"; a second instantiation fails (CUDA_ERROR_INVALID_VALUE,
 *   the status the function documents).
 * - cuGraphAddChildGraphNode: "If childGraph contains allocation nodes,
 *   free nodes, or conditional nodes, this call will return an error"
 *   (CUDA_ERROR_INVALID_VALUE); the child graph is cloned.
 * - cuGraphInstantiateWithParams: as cuGraphInstantiate with the
 *   parameters' flags; result_out CUDA_GRAPH_INSTANTIATE_SUCCESS and
 *   hErrNode_out NULL on success, CUDA_GRAPH_INSTANTIATE_ERROR on an
 *   invalid value.
 * - cuGraphExecUpdate (cuGraphExecUpdate_v2): "Updates the node
 *   parameters in the instantiated graph ... with the node parameters in
 *   a topologically identical graph": the counts of nodes differ ->
 *   CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED, errorNode NULL; a node's
 *   type differs -> CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED, errorNode
 *   the graph's node; either returns CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE
 *   and leaves the executable as it was. A capture records its nodes in
 *   one chain, so equal counts and types in order are equal topologies
 *   here; a child graph node's graph is compared the same way.
 * - cuGraphGetNodes: with nodes NULL, the count; else up to *numNodes
 *   handles, the rest of the array NULL, the count obtained back.
 * - cuUserObjectCreate: flags must be CU_USER_OBJECT_NO_DESTRUCTOR_SYNC;
 *   "Destructor callbacks cannot make CUDA API calls", they run on a
 *   thread of the driver's. Graphs hold references
 *   (cuGraphRetainUserObject, CU_GRAPH_USER_OBJECT_MOVE moving the
 *   caller's); executables and clones hold the graph's too. Here the
 *   destructor runs after the driver call that dropped the last reference,
 *   without the core lock. */
#include "core_state.h"

#include <limits.h>
#include <stdlib.h>

/* ---- User objects -------------------------------------------------------- */

static struct CUuserObject_st *graph_dead; /* under the core lock */

void
core_uobj_put(struct CUuserObject_st *obj, unsigned count)
{
    if (!obj)
        return;
    obj->refs = obj->refs > count ? obj->refs - count : 0;
    if (obj->refs == 0) {
        obj->next = graph_dead;
        graph_dead = obj;
    }
}

void
core_uobj_run(void)
{
    struct CUuserObject_st *obj, *next;

    core_lock();
    obj = graph_dead;
    graph_dead = NULL;
    core_unlock();
    for (; obj; obj = next) {
        next = obj->next;
        obj->destroy(obj->ptr);
        free(obj);
    }
}

/* A user object and a reference count as the user-object calls take
 * them: "Must be nonzero and not larger than INT_MAX". */
static int
graph_uobj_args(const void *object, unsigned int count)
{
    return object && count != 0 && count <= INT_MAX;
}

static CUresult
graph_leave(CUresult rc)
{
    drv_leave(rc);
    core_uobj_run();
    return rc;
}

CUresult
cuUserObjectCreate(CUuserObject *object_out, void *ptr, CUhostFn destroy,
                   unsigned int initialRefcount, unsigned int flags)
{
    struct CUuserObject_st *obj;
    CUresult rc;

    if (!object_out || !destroy ||
        !graph_uobj_args(object_out, initialRefcount) ||
        flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC)
        return CUDA_ERROR_INVALID_VALUE;
    rc = (CUresult)emu_fault("user-object", CUDA_ERROR_OUT_OF_MEMORY);
    if (rc != CUDA_SUCCESS)
        return rc;
    obj = calloc(1, sizeof(*obj));
    if (!obj)
        return CUDA_ERROR_OUT_OF_MEMORY;
    obj->refs = initialRefcount;
    obj->ptr = ptr;
    obj->destroy = destroy;
    *object_out = obj;
    return CUDA_SUCCESS;
}

CUresult
cuUserObjectRetain(CUuserObject object, unsigned int count)
{
    if (!graph_uobj_args(object, count))
        return CUDA_ERROR_INVALID_VALUE;
    core_lock();
    object->refs += count;
    core_unlock();
    return CUDA_SUCCESS;
}

CUresult
cuUserObjectRelease(CUuserObject object, unsigned int count)
{
    if (!graph_uobj_args(object, count))
        return CUDA_ERROR_INVALID_VALUE;
    core_lock();
    core_uobj_put(object, count);
    core_unlock();
    core_uobj_run();
    return CUDA_SUCCESS;
}

/* ---- Graphs ---------------------------------------------------------------- */

static struct CUgraph_st *
graph_lookup(struct CUctx_st *ctx, CUgraph h)
{
    struct CUgraph_st *gr;

    for (gr = ctx->graphs; gr && gr != h; gr = gr->next)
        ;
    return gr;
}

void
core_graph_drop(struct CUgraph_st *graph)
{
    int i;

    for (i = 0; i < graph->nnodes; i++)
        free(graph->nodes[i]);
    free(graph->nodes);
    core_oplist_put(graph->list);
    free(graph);
}

void
core_graph_free(struct CUctx_st *ctx, struct CUgraph_st *graph)
{
    struct CUgraph_st **pp;
    struct CUgraphExec_st *x;

    for (pp = &ctx->graphs; *pp; pp = &(*pp)->next) {
        if (*pp == graph) {
            *pp = graph->next;
            break;
        }
    }
    /* Its executables stay valid on their own. */
    for (x = ctx->execs; x; x = x->next)
        if (x->graph == graph)
            x->graph = NULL;
    core_graph_drop(graph);
}

CUresult
cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    struct CUctx_st *ctx;
    struct CUgraph_st *gr;
    CUresult rc;

    if (!phGraph || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    gr = calloc(1, sizeof(*gr));
    if (gr)
        gr->list = calloc(1, sizeof(*gr->list));
    if (!gr || !gr->list) {
        free(gr);
        return drv_leave(CUDA_ERROR_OUT_OF_MEMORY);
    }
    gr->list->refs = 1;
    gr->ctx = ctx;
    gr->next = ctx->graphs;
    ctx->graphs = gr;
    *phGraph = gr;
    return drv_leave(CUDA_SUCCESS);
}

CUresult
cuGraphDestroy(CUgraph hGraph)
{
    struct CUctx_st *ctx;
    struct CUgraph_st *gr;
    CUresult rc = drv_enter(&ctx, 0);

    if (rc != CUDA_SUCCESS)
        return rc;
    gr = graph_lookup(ctx, hGraph);
    if (!gr)
        return drv_leave(CUDA_ERROR_INVALID_VALUE);
    core_graph_free(ctx, gr);
    return graph_leave(CUDA_SUCCESS);
}

/* cuGraphClone: "creates a copy of originalGraph ... All parameters are
 * copied into the cloned graph. The original graph may be modified after
 * this call without affecting the clone"; "Cloning is not supported for
 * graphs which contain memory allocation nodes, memory free nodes, or
 * conditional nodes" (which status it returns is not documented: here
 * CUDA_ERROR_NOT_SUPPORTED). The clone has its own list of the original's
 * ops as they are now; their arguments stay the original list's, which
 * the clone holds a reference on, and the clone holds its own references
 * on the original's user objects. */
CUresult
cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph)
{
    struct CUgraph_st *from, *gr = NULL;
    struct core_oplist *list = NULL;
    struct CUctx_st *ctx;
    CUresult rc;
    int i;

    if (!phGraphClone)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    from = graph_lookup(ctx, originalGraph);
    if (!from)
        return drv_leave(CUDA_ERROR_INVALID_VALUE);
    if (from->list->mem_nodes)
        return drv_leave(CUDA_ERROR_NOT_SUPPORTED);
    gr = calloc(1, sizeof(*gr));
    list = calloc(1, sizeof(*list));
    if (gr && list && from->list->n > 0) {
        list->ops = malloc((size_t)from->list->n * sizeof(*list->ops));
        list->cap = list->ops ? from->list->n : 0;
    }
    if (gr && list && from->list->nurefs > 0) {
        list->urefs =
            malloc((size_t)from->list->nurefs * sizeof(*list->urefs));
        list->ucap = list->urefs ? from->list->nurefs : 0;
    }
    if (!gr || !list || list->cap < from->list->n ||
        list->ucap < from->list->nurefs) {
        if (list) {
            free(list->ops);
            free(list->urefs);
        }
        free(list);
        free(gr);
        return drv_leave(CUDA_ERROR_OUT_OF_MEMORY);
    }
    for (i = 0; i < from->list->n; i++) {
        list->ops[i] = from->list->ops[i];
        list->ops[i].release = NULL; /* the original list's to release */
    }
    list->n = from->list->n;
    for (i = 0; i < from->list->nurefs; i++) {
        list->urefs[i] = from->list->urefs[i];
        list->urefs[i].obj->refs += list->urefs[i].count;
    }
    list->nurefs = from->list->nurefs;
    list->refs = 1;
    list->shares = from->list;
    from->list->refs++;
    gr->list = list;
    gr->ctx = ctx;
    gr->next = ctx->graphs;
    ctx->graphs = gr;
    *phGraphClone = gr;
    return drv_leave(CUDA_SUCCESS);
}

/* The handle of the graph's node at `index`, made on first request. */
static struct CUgraphNode_st *
graph_node(struct CUgraph_st *gr, int index)
{
    if (index >= gr->nnodes) {
        int n = gr->list->n;
        struct CUgraphNode_st **nodes =
            realloc(gr->nodes, (size_t)n * sizeof(*nodes));

        if (!nodes)
            return NULL;
        for (int i = gr->nnodes; i < n; i++)
            nodes[i] = NULL;
        gr->nodes = nodes;
        gr->nnodes = n;
    }
    if (!gr->nodes[index]) {
        gr->nodes[index] = calloc(1, sizeof(**gr->nodes));
        if (gr->nodes[index]) {
            gr->nodes[index]->graph = gr;
            gr->nodes[index]->index = index;
        }
    }
    return gr->nodes[index];
}

/* The node a handle names, in a graph of ctx; NULL when it names none. */
static const struct CUgraphNode_st *
graph_node_lookup(struct CUctx_st *ctx, CUgraphNode h)
{
    struct CUgraph_st *gr;

    for (gr = ctx->graphs; gr; gr = gr->next)
        for (int i = 0; i < gr->nnodes; i++)
            if (gr->nodes[i] == h)
                return h;
    return NULL;
}

CUresult
cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    struct CUctx_st *ctx;
    struct CUgraph_st *gr;
    size_t i, n;
    CUresult rc;

    if (!numNodes)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    gr = graph_lookup(ctx, hGraph);
    if (!gr)
        return drv_leave(CUDA_ERROR_INVALID_VALUE);
    n = (size_t)gr->list->n;
    if (!nodes) {
        *numNodes = n;
        return drv_leave(CUDA_SUCCESS);
    }
    for (i = 0; i < *numNodes; i++) {
        nodes[i] = i < n ? graph_node(gr, (int)i) : NULL;
        if (i < n && !nodes[i])
            return drv_leave(CUDA_ERROR_OUT_OF_MEMORY);
    }
    if (*numNodes > n)
        *numNodes = n;
    return drv_leave(CUDA_SUCCESS);
}

CUresult
cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
    const struct CUgraphNode_st *node;
    struct CUctx_st *ctx;
    CUresult rc;

    if (!hNode || !type)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    node = graph_node_lookup(ctx, hNode);
    if (!node)
        return drv_leave(CUDA_ERROR_INVALID_VALUE);
    *type = (CUgraphNodeType)node->graph->list->ops[node->index].node;
    return drv_leave(CUDA_SUCCESS);
}

/* A child graph node's argument: the child's ops as they were when it was
 * cloned. */
struct graph_child {
    struct core_oplist *list;
    int n;
};

static void
graph_child_release(void *arg)
{
    struct graph_child *child = arg;

    core_oplist_put(child->list);
    free(child);
}

CUresult
cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                         const CUgraphNode *dependencies,
                         size_t numDependencies, CUgraph childGraph)
{
    struct emu_op op = { "child-graph", NULL, graph_child_release, NULL, 0.0,
                         CU_GRAPH_NODE_TYPE_GRAPH };
    struct CUgraph_st *parent, *child;
    struct graph_child *arg;
    struct CUctx_st *ctx;
    CUresult rc;
    size_t i;

    if (!phGraphNode || (numDependencies && !dependencies))
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    parent = graph_lookup(ctx, hGraph);
    child = graph_lookup(ctx, childGraph);
    if (!parent || !child || parent == child)
        return drv_leave(CUDA_ERROR_INVALID_VALUE);
    for (i = 0; i < numDependencies; i++) {
        const struct CUgraphNode_st *dep =
            graph_node_lookup(ctx, dependencies[i]);

        if (!dep || dep->graph != parent)
            return drv_leave(CUDA_ERROR_INVALID_VALUE);
    }
    if (child->list->mem_nodes)
        return drv_leave(CUDA_ERROR_INVALID_VALUE);
    arg = malloc(sizeof(*arg));
    if (!arg)
        return drv_leave(CUDA_ERROR_OUT_OF_MEMORY);
    arg->list = child->list;
    arg->n = child->list->n;
    child->list->refs++;
    op.arg = arg;
    if (core_oplist_add(parent->list, &op) != 0) {
        graph_child_release(arg);
        return drv_leave(CUDA_ERROR_OUT_OF_MEMORY);
    }
    *phGraphNode = graph_node(parent, parent->list->n - 1);
    return drv_leave(*phGraphNode ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY);
}

/* The graph's references to object; with `add`, a new entry (count 0)
 * when it has none. NULL when it has none, or out of memory. */
static struct core_uref *
graph_uref(struct core_oplist *list, CUuserObject object, int add)
{
    int i;

    for (i = 0; i < list->nurefs; i++)
        if (list->urefs[i].obj == object)
            return &list->urefs[i];
    if (!add)
        return NULL;
    if (list->nurefs == list->ucap) {
        int cap = list->ucap ? list->ucap * 2 : 4;
        struct core_uref *u = realloc(list->urefs, (size_t)cap * sizeof(*u));

        if (!u)
            return NULL;
        list->urefs = u;
        list->ucap = cap;
    }
    list->urefs[list->nurefs] = (struct core_uref){ object, 0 };
    return &list->urefs[list->nurefs++];
}

CUresult
cuGraphRetainUserObject(CUgraph graph, CUuserObject object,
                        unsigned int count, unsigned int flags)
{
    struct core_uref *u;
    struct CUctx_st *ctx;
    struct CUgraph_st *gr;
    CUresult rc;

    if (!graph_uobj_args(object, count) ||
        (flags != 0 && flags != CU_GRAPH_USER_OBJECT_MOVE))
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    gr = graph_lookup(ctx, graph);
    if (!gr)
        return drv_leave(CUDA_ERROR_INVALID_VALUE);
    u = graph_uref(gr->list, object, 1);
    if (!u)
        return drv_leave(CUDA_ERROR_OUT_OF_MEMORY);
    u->count += count;
    if (!(flags & CU_GRAPH_USER_OBJECT_MOVE))
        object->refs += count;
    return drv_leave(CUDA_SUCCESS);
}

CUresult
cuGraphReleaseUserObject(CUgraph graph, CUuserObject object,
                         unsigned int count)
{
    struct core_uref *u;
    struct CUctx_st *ctx;
    struct CUgraph_st *gr;
    CUresult rc;

    if (!graph_uobj_args(object, count))
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    gr = graph_lookup(ctx, graph);
    if (!gr)
        return drv_leave(CUDA_ERROR_INVALID_VALUE);
    u = graph_uref(gr->list, object, 0);
    if (!u || u->count < count)
        return drv_leave(CUDA_ERROR_INVALID_VALUE);
    u->count -= count;
    core_uobj_put(object, count);
    return graph_leave(CUDA_SUCCESS);
}

/* ---- Executable graphs ------------------------------------------------------ */

CUresult
cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                   unsigned long long flags)
{
    struct CUctx_st *ctx;
    struct CUgraph_st *gr;
    struct CUgraphExec_st *x;
    CUresult rc;

    (void)flags;
    if (!phGraphExec || !hGraph)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    gr = graph_lookup(ctx, hGraph);
    if (!gr || (gr->list->mem_nodes && gr->execs > 0))
        return drv_leave(CUDA_ERROR_INVALID_VALUE);
    x = calloc(1, sizeof(*x));
    if (!x)
        return drv_leave(CUDA_ERROR_OUT_OF_MEMORY);
    x->ctx = ctx;
    x->list = gr->list;
    x->list->refs++;
    x->n = gr->list->n;
    x->graph = gr;
    gr->execs++;
    x->next = ctx->execs;
    ctx->execs = x;
    *phGraphExec = x;
    return drv_leave(CUDA_SUCCESS);
}

CUresult
cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                             CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    CUresult rc;

    if (!instantiateParams)
        return CUDA_ERROR_INVALID_VALUE;
    rc = cuGraphInstantiate(phGraphExec, hGraph, instantiateParams->flags);
    instantiateParams->hErrNode_out = NULL;
    instantiateParams->result_out = rc == CUDA_SUCCESS
                                        ? CUDA_GRAPH_INSTANTIATE_SUCCESS
                                        : CUDA_GRAPH_INSTANTIATE_ERROR;
    return rc;
}

/* The index of the first of the first n ops of a and b whose types
 * differ (child graphs compared within), n when none does; -1 when a
 * child graph's counts differ. */
static int
graph_first_change(const struct core_oplist *a, const struct core_oplist *b,
                   int n)
{
    int i;

    for (i = 0; i < n; i++) {
        const struct graph_child *ca, *cb;

        if (a->ops[i].node != b->ops[i].node)
            return i;
        if (a->ops[i].node != CU_GRAPH_NODE_TYPE_GRAPH)
            continue;
        ca = a->ops[i].arg;
        cb = b->ops[i].arg;
        if (ca->n != cb->n || graph_first_change(ca->list, cb->list, ca->n) !=
                                  ca->n)
            return i;
    }
    return n;
}

CUresult
cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
                  CUgraphExecUpdateResultInfo *resultInfo)
{
    CUgraphExecUpdateResultInfo info = { CU_GRAPH_EXEC_UPDATE_ERROR, NULL,
                                         NULL };
    struct CUctx_st *ctx;
    struct CUgraphExec_st *x;
    struct CUgraph_st *gr;
    CUresult rc;
    int at;

    if (!resultInfo)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    for (x = ctx->execs; x && x != hGraphExec; x = x->next)
        ;
    gr = graph_lookup(ctx, hGraph);
    if (!x || !gr) {
        *resultInfo = info;
        return drv_leave(CUDA_ERROR_INVALID_VALUE);
    }
    if (gr->list->n != x->n) {
        info.result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
        *resultInfo = info;
        return drv_leave(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    }
    at = graph_first_change(x->list, gr->list, x->n);
    if (at < x->n) {
        info.result = CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
        info.errorNode = graph_node(gr, at);
        *resultInfo = info;
        return drv_leave(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    }
    /* Launched work may still replay the old ops: run it first. */
    core_sync_ctx(ctx);
    gr->list->refs++;
    core_oplist_put(x->list);
    x->list = gr->list;
    info.result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    *resultInfo = info;
    return graph_leave(CUDA_SUCCESS);
}

/* Queues the first n ops of list on s, child graphs' ops in their place. */
static CUresult
graph_enqueue(struct CUstream_st *s, const struct core_oplist *list, int n)
{
    CUresult rc = CUDA_SUCCESS;
    int i;

    for (i = 0; rc == CUDA_SUCCESS && i < n; i++) {
        struct emu_op op = list->ops[i];

        if (op.node == CU_GRAPH_NODE_TYPE_GRAPH) {
            const struct graph_child *child = op.arg;

            rc = graph_enqueue(s, child->list, child->n);
            continue;
        }
        op.release = NULL; /* the graph owns the arguments */
        rc = core_enqueue(s, &op, NULL, NULL);
    }
    return rc;
}

CUresult
cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    struct CUctx_st *ctx;
    struct CUgraphExec_st *x;
    struct CUstream_st *s;
    CUresult rc;

    rc = drv_enter(&ctx, 1);
    if (rc != CUDA_SUCCESS)
        return rc;
    for (x = ctx->execs; x && x != hGraphExec; x = x->next)
        ;
    if (!x)
        return drv_leave(CUDA_ERROR_INVALID_VALUE);
    rc = core_stream_resolve(ctx, hStream, &s);
    if (rc == CUDA_SUCCESS)
        rc = graph_enqueue(s, x->list, x->n);
    return drv_leave(rc);
}

/* The per-thread default stream's launch, which cuda.h names
 * cuGraphLaunch under CUDA_API_PER_THREAD_DEFAULT_STREAM (nvcc
 * --default-stream per-thread) and cuGetProcAddress gives for
 * "cuGraphLaunch" with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM:
 * stream 0 is the calling thread's stream, not the legacy one. */
CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);

CUresult
cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    return cuGraphLaunch(hGraphExec, hStream ? hStream : CU_STREAM_PER_THREAD);
}

CUresult
cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    struct CUctx_st *ctx;
    struct CUgraphExec_st **pp, *x;
    CUresult rc = drv_enter(&ctx, 0);

    if (rc != CUDA_SUCCESS)
        return rc;
    for (pp = &ctx->execs; *pp && *pp != hGraphExec; pp = &(*pp)->next)
        ;
    if (!*pp)
        return drv_leave(CUDA_ERROR_INVALID_VALUE);
    x = *pp;
    *pp = x->next;
    if (x->graph)
        x->graph->execs--;
    /* Launched work may still replay the ops: run it first. */
    core_sync_ctx(ctx);
    core_oplist_put(x->list);
    free(x);
    return graph_leave(CUDA_SUCCESS);
}
