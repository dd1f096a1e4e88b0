/* A function for the resolver test to find in a local-scope library. */
int amp_resolve_fixture_answer(void);

int
amp_resolve_fixture_answer(void)
{
    return 42;
}
