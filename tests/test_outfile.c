/* test_outfile.c - where -o writes (sc_write_file_atomic, sc.h): a regular
 * file is replaced whole, a symbolic link is followed and its target
 * replaced, a character device or FIFO is written through and never
 * replaced, "-" and /dev/stdout are standard output, a folder is refused; a
 * new file gets 0666 less the umask; SIGINT or SIGTERM during a write leave
 * no temporary file. Devices are made with mknod in the test's own folder
 * (root only), never the real /dev ones. */
#include "check.h"
#include "json.h"
#include "outdir.h"
#include "sc.h"

#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char out[1 << 16];

#define SC(...) sc_test_sh(out, sizeof out, __VA_ARGS__)
#define GEN "model gen gpt --layers 2 --hidden 64 --heads 2 --seq 16 --vocab 100"

static int is_chr(const char *p)
{
    struct stat sb;
    return lstat(p, &sb) == 0 && S_ISCHR(sb.st_mode);
}

static int is_link(const char *p)
{
    struct stat sb;
    return lstat(p, &sb) == 0 && S_ISLNK(sb.st_mode);
}

static int is_reg(const char *p)
{
    struct stat sb;
    return lstat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* 1 if dir holds a name containing ".tmp" (a leftover temporary file). */
static int has_tmp(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp"))
            found = 1;
    closedir(d);
    return found;
}

static char *path_in(const char *name)
{
    static char p[4][PATH_MAX];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", sc_test_tmpdir(), name);
    return p[k];
}

TEST(outfile_device_written_through_never_replaced)
{
    const char *d = sc_test_tmpdir();
    if (geteuid() != 0) {
        sc_test_skip("mknod needs root");
        return;
    }
    /* copies of /dev/full and /dev/null, made here */
    REQUIRE(SC("cd %s && mknod myfull c 1 7 && mknod mynull c 1 3 && mknod null.svg c 1 3 "
               "&& mkdir w && mknod w/whatif.json c 1 3",
               d) == 0);
    /* full: the write fails (an I/O error, 3) and the device stays */
    CHECK_EQ_INT(SC("cd %s && %s " GEN " -o myfull", d, sc_test_bin()), 3);
    CHECK_STR_HAS(out, "stagecraft: myfull: write error: No space left on device");
    CHECK(is_chr(path_in("myfull")));
    /* null: written through, exit 0, still a device */
    CHECK_EQ_INT(SC("cd %s && %s " GEN " -o mynull", d, sc_test_bin()), 0);
    CHECK(is_chr(path_in("mynull")));
    CHECK_EQ_INT(SC("cd %s && %s cluster show p4d.24xlarge -o mynull", d, sc_test_bin()), 0);
    CHECK(is_chr(path_in("mynull")));
    CHECK(!has_tmp(d));
    /* through the library, as every writer calls it */
    sc_error err = {0};
    CHECK_EQ_INT(sc_write_file_atomic(path_in("mynull"), "x\n", 2, &err), SC_OK);
    CHECK_EQ_INT(sc_write_file_atomic(path_in("myfull"), "x\n", 2, &err), SC_EIO);
    CHECK_STR_HAS(err.msg, "myfull: write error: No space left on device");
    CHECK(is_chr(path_in("myfull")) && is_chr(path_in("mynull")));
    /* a plot (gnuplot draws elsewhere, the picture goes through) */
    if (SC("command -v gnuplot") == 0) {
        REQUIRE(SC("cd %s && %s sim --model gpt-1.3b --cluster p4d.24xlarge --dp 1 --tp 8 "
                   "--pp 1 --microbatches 1 --mbs 1 --timeline tl.json",
                   d, sc_test_bin()) == 0);
        CHECK_EQ_INT(SC("cd %s && %s plot timeline tl.json -o null.svg", d, sc_test_bin()), 0);
        CHECK(is_chr(path_in("null.svg")));
    }
    /* a set of files in a folder (whatif -o DIR): the device among them
     * stays a device, the others are files */
    CHECK_EQ_INT(SC("cd %s && %s whatif --model gpt-1.3b --cluster p4d.24xlarge --nodes 1 "
                    "--global-batch 64 --tokens 1e9 -o w",
                    d, sc_test_bin()),
                 0);
    CHECK(is_chr(path_in("w/whatif.json")));
    CHECK(is_reg(path_in("w/whatif.csv")));
    CHECK(!has_tmp(path_in("w")));
}

TEST(outfile_fifo_written_through)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(SC("cd %s && mkfifo pipe", d) == 0);
    /* a reader, then the writer: the pipe carries the file and stays a pipe
     * (the reader gives up after 10 s, for a writer that replaced the pipe;
     * its output goes to a file so that the shell here need not wait) */
    CHECK_EQ_INT(SC("cd %s && (timeout 10 cat pipe > got 2>/dev/null &) && %s " GEN
                    " -o pipe && sleep 0.2 && %s model show got --depth 0",
                    d, sc_test_bin(), sc_test_bin()),
                 0);
    CHECK_STR_HAS(out, "model gpt");
    struct stat sb;
    CHECK(lstat(path_in("pipe"), &sb) == 0 && S_ISFIFO(sb.st_mode));
    CHECK(!has_tmp(d));
}

TEST(outfile_symlink_followed_target_replaced)
{
    const char *d = sc_test_tmpdir();
    REQUIRE(SC("cd %s && mkdir sub && echo old > real.json && ln -s real.json link.json && "
               "ln -s ../real2.json sub/rel.json && echo old > real2.json && "
               "ln -s link.json chain.json && ln -s made.json dangling.json && "
               "ln -s loop1 loop2 && ln -s loop2 loop1",
               d) == 0);
    /* a link to a file: the link stays, the file gets the new bytes */
    CHECK_EQ_INT(SC("cd %s && %s " GEN " -o link.json", d, sc_test_bin()), 0);
    CHECK(is_link(path_in("link.json")));
    CHECK(is_reg(path_in("real.json")));
    CHECK_EQ_INT(SC("cd %s && %s model show real.json --depth 0", d, sc_test_bin()), 0);
    /* a relative link in another folder is relative to that folder */
    CHECK_EQ_INT(SC("cd %s && %s " GEN " -o sub/rel.json", d, sc_test_bin()), 0);
    CHECK(is_link(path_in("sub/rel.json")));
    CHECK_EQ_INT(SC("cd %s && %s model show real2.json --depth 0", d, sc_test_bin()), 0);
    /* a link to a link */
    CHECK_EQ_INT(SC("cd %s && echo old > real.json && %s " GEN " -o chain.json", d, sc_test_bin()), 0);
    CHECK(is_link(path_in("chain.json")) && is_link(path_in("link.json")));
    CHECK_EQ_INT(SC("cd %s && %s model show real.json --depth 0", d, sc_test_bin()), 0);
    /* a dangling link: its target is created */
    CHECK_EQ_INT(SC("cd %s && %s " GEN " -o dangling.json", d, sc_test_bin()), 0);
    CHECK(is_link(path_in("dangling.json")));
    CHECK(is_reg(path_in("made.json")));
    /* a loop: an error, nothing made */
    CHECK_EQ_INT(SC("cd %s && %s " GEN " -o loop1", d, sc_test_bin()), 3);
    CHECK_STR_HAS(out, "loop1: cannot write: Too many levels of symbolic links");
    CHECK(!has_tmp(d) && !has_tmp(path_in("sub")));
}

TEST(outfile_stdout_and_refusals)
{
    const char *d = sc_test_tmpdir();
    /* -o - and links to this process's descriptors (as /dev/stdout is):
     * standard output, into a file or a pipe. The links are made here, so
     * that a writer that replaced them would harm nothing outside. */
    CHECK_EQ_INT(SC("cd %s && %s " GEN " -o - > a.json && %s model show a.json --depth 0", d,
                    sc_test_bin(), sc_test_bin()),
                 0);
    REQUIRE(SC("cd %s && ln -s /proc/self/fd/1 out1 && ln -s /dev/fd/1 fd1", d) == 0);
    CHECK_EQ_INT(SC("cd %s && %s " GEN " -o out1 > b.json && cmp a.json b.json", d, sc_test_bin()), 0);
    CHECK_EQ_INT(SC("cd %s && %s " GEN " -o out1 | cmp - a.json", d, sc_test_bin()), 0);
    CHECK_EQ_INT(SC("cd %s && %s " GEN " -o fd1 > c.json && cmp a.json c.json", d, sc_test_bin()), 0);
    CHECK(is_reg(path_in("b.json")));
    CHECK(is_link(path_in("out1")) && is_link(path_in("fd1")));
    /* a folder is refused (bad usage, 2), and left alone */
    CHECK_EQ_INT(SC("cd %s && mkdir dir && %s " GEN " -o dir", d, sc_test_bin()), 2);
    CHECK_STR_HAS(out, "dir: is a folder: refusing to write over it");
    /* /proc is not a place for files */
    sc_error err = {0};
    CHECK_EQ_INT(sc_write_file_atomic("/proc/self/comm", "x", 1, &err), SC_EINVAL);
    CHECK_STR_HAS(err.msg, "refusing to write under /proc");
    CHECK(!has_tmp(d));
}

TEST(outfile_mode_follows_umask)
{
    const char *d = sc_test_tmpdir();
    struct stat sb;
    CHECK_EQ_INT(SC("cd %s && umask 027 && %s " GEN " -o a.json", d, sc_test_bin()), 0);
    CHECK(stat(path_in("a.json"), &sb) == 0 && (sb.st_mode & 0777) == 0640);
    CHECK_EQ_INT(SC("cd %s && umask 0 && %s cluster show p4d.24xlarge -o b.json", d, sc_test_bin()), 0);
    CHECK(stat(path_in("b.json"), &sb) == 0 && (sb.st_mode & 0777) == 0666);
    CHECK_EQ_INT(SC("cd %s && umask 077 && %s " GEN " -o b.json", d, sc_test_bin()), 0);
    CHECK(stat(path_in("b.json"), &sb) == 0 && (sb.st_mode & 0777) == 0600);
}

/* A child writes a large file through sc_write_file_atomic; as soon as its
 * temporary file shows up the parent sends sig. The child must die of sig
 * (the handler re-raises it) and leave no temporary file and no target.
 * Returns 1 when the signal came in time, 0 when the write won the race. */
static int kill_mid_write(int sig, const char *dir)
{
    char target[PATH_MAX];
    snprintf(target, sizeof target, "%s/big.json", dir);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        size_t n = (size_t)256 << 20;
        char *buf = malloc(n);
        if (!buf)
            _exit(3);
        memset(buf, ' ', n);
        sc_error err;
        sc_status st = sc_write_file_atomic(target, buf, n, &err);
        _exit(st == SC_OK ? 0 : 4);
    }
    struct timespec t0, now, nap = {0, 100000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int sent = 0;
    for (;;) {
        if (has_tmp(dir)) {
            kill(pid, sig);
            sent = 1;
            break;
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) { /* finished before we saw it */
            unlink(target);
            return 0;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec > 20)
            break;
        nanosleep(&nap, NULL);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!sent) {
        sc_test_fail(__FILE__, __LINE__, "no temporary file seen in 20 s");
        return -1;
    }
    if (WIFEXITED(st)) { /* the write finished between the look and the kill */
        unlink(target);
        return 0;
    }
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == sig);
    CHECK(!has_tmp(dir));
    CHECK(!sc_test_exists(target));
    return 1;
}

TEST(outfile_signal_removes_temporary_file)
{
    const int sigs[] = {SIGTERM, SIGINT};
    for (size_t i = 0; i < SC_ARRAY_LEN(sigs); i++) {
        /* a signal this process ignores (SIGINT in a job a shell without job control
         * started in the background) is left alone by design (sc.c, tmp_install):
         * the child would finish its write every time */
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) {
            sc_test_skip("signal %d is ignored in this process (started in the background?)",
                         sigs[i]);
            continue;
        }
        int got = 0;
        for (int tries = 0; tries < 5 && !got; tries++) {
            int r = kill_mid_write(sigs[i], sc_test_tmpdir());
            if (r < 0)
                return;
            got = r;
        }
        if (!got)
            sc_test_fail(__FILE__, __LINE__, "signal %d: the write always finished first",
                         sigs[i]);
    }
}

/* An outdir's staging folder goes too: a signal while a set is open. */
TEST(outfile_signal_removes_staging_folder)
{
    const char *d = sc_test_tmpdir();
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/set", d);
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        sc_outdir *od = NULL;
        sc_error err;
        const char *p;
        if (sc_outdir_open(dir, "t", &od, &err) || sc_outdir_file(od, "a.txt", &p, &err) ||
            sc_write_file_atomic(p, "a\n", 2, &err))
            _exit(3);
        char c = 'x';
        if (write(fds[1], &c, 1) != 1)
            _exit(4);
        pause(); /* staged, not committed: killed here */
        _exit(5);
    }
    close(fds[1]);
    char c;
    REQUIRE(read(fds[0], &c, 1) == 1);
    close(fds[0]);
    kill(pid, SIGTERM);
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    CHECK(SC("ls -A %s | wc -l", dir) == 0);
    CHECK_STR_HAS(out, "0");
}
