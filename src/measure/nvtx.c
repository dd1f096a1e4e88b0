/* The `ampshim` NVTX domain: categories named after the precision modes. */
#include "measure/nvtx.h"

#include "base/once.h"

#include <nvtx3/nvToolsExt.h>

static struct amp_once amp_nvtx_once = AMP_ONCE_INIT;
static nvtxDomainHandle_t amp_nvtx_domain;

static void
amp_nvtx_start(void)
{
    int m;

    amp_nvtx_domain = nvtxDomainCreateA("ampshim");
    for (m = 0; m < AMP_MODE_COUNT; m++)
        nvtxDomainNameCategoryA(amp_nvtx_domain, (uint32_t)m + 1,
                                amp_mode_name((enum amp_mode)m));
}

void
amp_nvtx_push(const char *api, enum amp_mode mode, double flops)
{
    amp_once(&amp_nvtx_once, amp_nvtx_start);
    /* No tool took NVTX's calls when the domain was made (it is made
     * only through one): every range is a no-op, so none is built. */
    if (amp_nvtx_domain) {
        nvtxEventAttributes_t a = {0};

        a.version = NVTX_VERSION;
        a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
        a.category = (uint32_t)mode + 1;
        a.messageType = NVTX_MESSAGE_TYPE_ASCII;
        a.message.ascii = api;
        a.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
        a.payload.dValue = flops;
        nvtxDomainRangePushEx(amp_nvtx_domain, &a);
    }
}

void
amp_nvtx_pop(void)
{
    if (amp_nvtx_domain)
        nvtxDomainRangePop(amp_nvtx_domain);
}
