/* libFuzzer target: the ELF note parser that reads a program's build-id
 * (policy discovery by build-id) on arbitrary note areas: it must find a
 * descriptor inside the area and within the output's capacity, or none,
 * and never read past the area (ASan). */
/* amp_note_build_id is private to policy discovery: compiled in here. */
#include "../src/decide/policy_find.c"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char out[AMP_POLICY_BUILD_ID_MAX];
    /* An exact copy, aligned as notes are: ASan sees any read past it. */
    unsigned char *notes = malloc(size ? size : 1);
    size_t len = 0;

    if (!notes)
        return 0;
    memcpy(notes, data, size);
    if (amp_note_build_id(notes, size, out, sizeof out, &len) == 0 &&
        (len == 0 || len > sizeof out || len > size))
        abort();
    free(notes);
    return 0;
}
