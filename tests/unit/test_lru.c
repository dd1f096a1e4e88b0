/* Unit tests of the shim's bounded least-recently-used map (its caches of
 * heuristic answers, algorithms and execution plans). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/lru.h"

#include <string.h>

struct key {
    int a, b;
};

/* A hit returns the value stored; a miss NULL. */
static void
test_find_add(void **state)
{
    struct amp_lru m;
    struct key k = {1, 2}, other = {2, 1};
    int *v;

    (void)state;
    assert_int_equal(amp_lru_init(&m, 4, sizeof k, sizeof *v), AMP_OK);
    assert_null(amp_lru_find(&m, &k));
    v = amp_lru_add(&m, &k, NULL, NULL);
    assert_non_null(v);
    assert_int_equal(*v, 0);
    *v = 42;
    v = amp_lru_find(&m, &k);
    assert_non_null(v);
    assert_int_equal(*v, 42);
    assert_null(amp_lru_find(&m, &other));
    amp_lru_fini(&m, NULL, NULL);
    assert_null(amp_lru_find(&m, &k));
    assert_null(amp_lru_add(&m, &k, NULL, NULL));
}

/* Past its capacity the map forgets the least recently used key, not the
 * one added first when it was used since. */
static void
test_evicts_least_recent(void **state)
{
    struct amp_lru m;
    struct key k;
    int i, *v;

    (void)state;
    assert_int_equal(amp_lru_init(&m, 300, sizeof k, sizeof *v), AMP_OK);
    for (i = 0; i < 300; i++) {
        k = (struct key){i, -i};
        v = amp_lru_add(&m, &k, NULL, NULL);
        assert_non_null(v);
        *v = i;
    }
    k = (struct key){0, 0};
    assert_non_null(amp_lru_find(&m, &k)); /* 0 the newest, 1 the oldest */
    k = (struct key){300, -300};
    assert_non_null(amp_lru_add(&m, &k, NULL, NULL));
    k = (struct key){1, -1};
    assert_null(amp_lru_find(&m, &k));
    for (i = 2; i < 300; i++) {
        k = (struct key){i, -i};
        v = amp_lru_find(&m, &k);
        assert_non_null(v);
        assert_int_equal(*v, i);
    }
    k = (struct key){0, 0};
    assert_non_null(amp_lru_find(&m, &k));
    amp_lru_fini(&m, NULL, NULL);
}

static int
keep_odd(void *value, void *arg)
{
    int *evicted = arg;

    if (*(int *)value % 2)
        return 0;
    *evicted = *(int *)value;
    return 1;
}

static int
count_drop(void *value, void *arg)
{
    (void)value;
    ++*(int *)arg;
    return 1;
}

/* An entry its owner keeps is passed over; when every one is kept,
 * nothing is added. */
static void
test_kept_entries(void **state)
{
    struct amp_lru m;
    struct key k;
    int i, evicted = -1, dropped = 0, *v;

    (void)state;
    assert_int_equal(amp_lru_init(&m, 3, sizeof k, sizeof *v), AMP_OK);
    for (i = 1; i <= 3; i++) {
        k = (struct key){i, 0};
        *(int *)amp_lru_add(&m, &k, keep_odd, &evicted) = i;
    }
    k = (struct key){4, 0};
    v = amp_lru_add(&m, &k, keep_odd, &evicted); /* evicts 2, not 1 */
    assert_non_null(v);
    assert_int_equal(evicted, 2);
    *v = 5;
    k = (struct key){1, 0};
    assert_non_null(amp_lru_find(&m, &k));
    k = (struct key){2, 0};
    assert_null(amp_lru_find(&m, &k));
    k = (struct key){6, 0};
    assert_null(amp_lru_add(&m, &k, keep_odd, &evicted));
    amp_lru_fini(&m, count_drop, &dropped);
    assert_int_equal(dropped, 3);
}

/* A key removed is absent, and its room goes to the next key added
 * before any entry is evicted. */
static void
test_remove(void **state)
{
    struct amp_lru m;
    struct key k;
    int i, dropped = 0;

    (void)state;
    assert_int_equal(amp_lru_init(&m, 3, sizeof k, sizeof(int)), AMP_OK);
    for (i = 0; i < 3; i++) {
        k = (struct key){i, 0};
        *(int *)amp_lru_add(&m, &k, NULL, NULL) = i;
    }
    k = (struct key){1, 0};
    amp_lru_remove(&m, &k);
    amp_lru_remove(&m, &k);
    assert_null(amp_lru_find(&m, &k));
    k = (struct key){7, 0};
    assert_non_null(amp_lru_add(&m, &k, NULL, NULL));
    for (i = 0; i < 3; i += 2) {
        k = (struct key){i, 0};
        assert_non_null(amp_lru_find(&m, &k));
    }
    amp_lru_fini(&m, count_drop, &dropped);
    assert_int_equal(dropped, 3);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find_add),
        cmocka_unit_test(test_evicts_least_recent),
        cmocka_unit_test(test_kept_entries),
        cmocka_unit_test(test_remove),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
