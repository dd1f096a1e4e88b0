/* The status every internal function of the shim returns. */
#ifndef AMP_STATUS_H
#define AMP_STATUS_H

enum amp_status {
    AMP_OK = 0,
    AMP_ERR_NOMEM = -1,       /* host memory */
    AMP_ERR_DRIVER = -2,      /* a driver call failed */
    AMP_ERR_UNAVAILABLE = -3, /* a needed function or feature is missing */
    AMP_ERR_INVALID = -4,     /* bad input */
    AMP_ERR_TOO_BIG = -5,     /* scratch beyond AMPSHIM_SCRATCH_MAX */
    AMP_ERR_IO = -6,
};

#endif
