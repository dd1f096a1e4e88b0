/* Runs this test binary again with AMPSHIM_EMU_FAIL set, so that a fault
 * scenario starts in a fresh emulator that reads the variable once. */
#ifndef AMP_TEST_EMU_CHILD_H
#define AMP_TEST_EMU_CHILD_H

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* Exit status of `self --child scenario` run with AMPSHIM_EMU_FAIL=fail,
 * or -1 when it did not exit normally. */
static inline int
amp_test_run_child(const char *scenario, const char *fail)
{
    pid_t pid = fork();
    int status;

    if (pid == 0) {
        setenv("AMPSHIM_EMU_FAIL", fail, 1);
        execl("/proc/self/exe", "child", "--child", scenario, (char *)NULL);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

#endif
