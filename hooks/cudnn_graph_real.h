/* The cuDNN backend API's real functions: their pointer types and the
 * table cudnn_graph.c resolves once. The hooks read the program's plans
 * through them; the twin plans (cudnn_graph_plans.c) are built and
 * executed through them. */
#ifndef AMP_CUDNN_GRAPH_REAL_H
#define AMP_CUDNN_GRAPH_REAL_H

#include "cudnn_graph_symbols.h"

#define AMP_PFN_TYPE(ret, name, params) typedef ret(*amp_pfn_##name) params;
AMP_CUDNN_GRAPH_SYMBOLS(AMP_PFN_TYPE)
#undef AMP_PFN_TYPE

struct amp_graph_fns {
#define AMP_REAL_MEMBER(ret, name, params) amp_pfn_##name name;
    AMP_CUDNN_GRAPH_SYMBOLS(AMP_REAL_MEMBER)
#undef AMP_REAL_MEMBER
};

/* The real functions, NULL where the library has none. */
extern struct amp_graph_fns amp_graph_fn;

/* Every called function was found: the converted path can run. */
extern int amp_graph_complete;

#endif
