/* A library whose static function calls a probe through a pointer, for
 * the symbolization test (built unstripped and stripped). */
typedef const void *(*amp_fixture_probe)(void);

const void *amp_fixture_entry(amp_fixture_probe probe);

static __attribute__((noinline)) const void *
amp_fixture_static_site(amp_fixture_probe probe)
{
    const void *at = probe();

    __asm__ volatile("" ::: "memory"); /* no tail call */
    return at;
}

/* Through a volatile pointer: the static function is not inlined. */
static const void *(*volatile amp_fixture_site)(amp_fixture_probe) =
    amp_fixture_static_site;

const void *
amp_fixture_entry(amp_fixture_probe probe)
{
    return amp_fixture_site(probe);
}
