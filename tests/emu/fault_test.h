/* Fault injection in the emulator's tests: AMPSHIM_EMU_FAIL is read once
 * per process, so the checks that need it run in a fresh copy of the test
 * binary. Include after cmocka.h. */
#ifndef EMU_FAULT_TEST_H
#define EMU_FAULT_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs this binary again as `name arg` with AMPSHIM_EMU_FAIL=spec and
 * asserts that it exits with status 0. */
static inline void
emu_test_rerun_with_faults(const char *name, const char *spec,
                           const char *arg)
{
    int status = 0;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("AMPSHIM_EMU_FAIL", spec, 1);
        execl("/proc/self/exe", name, arg, (char *)NULL);
        _exit(127);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

#endif
