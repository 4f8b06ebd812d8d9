/* outdir.h - output folders: creating one (mkdir -p) and writing a set of
 * files into it all or none.
 *
 * A command that leaves several files in a folder (whatif's CSV, JSON and
 * charts; seed38's JSON and charts) writes them through an sc_outdir: every
 * file goes first into a fresh hidden staging folder inside DIR
 * (DIR/.TAG.tmpXXXXXX), and only when the caller is done and every file
 * exists are they renamed into DIR. A failure before that leaves DIR's files
 * as they were. Each file is also written whole on its own by whatever
 * writes it (sc_write_file_atomic, sc_json_save, sc_plot_lines: a temporary
 * file, then rename), so the staging folder never holds half a file that
 * could be renamed into place.
 *
 *     sc_outdir *od;
 *     const char *path;
 *     sc_status st = sc_outdir_open(dir, "whatif", &od, err);
 *     if (st)
 *         return st;
 *     st = sc_outdir_file(od, "whatif.csv", &path, err);
 *     if (!st)
 *         st = sc_write_file_atomic(path, data, len, err);
 *     ...
 *     return sc_outdir_close(od, st, err); // commits when st is SC_OK
 *
 * A DIR/NAME that already is a symbolic link, a device or a FIFO gets the
 * file's bytes through sc_write_file_atomic's rules (the link's target
 * replaced, the device written through) instead of being renamed over. The
 * staging folder and its files are removed on SIGINT, SIGTERM and SIGHUP
 * (sc_tmp_register); the folder DIR is fsync'd after the renames.
 *
 * Trade-off taken: the renames into DIR are one per file, so a rename that
 * fails half-way (DIR on another file system cannot happen: the staging
 * folder is inside DIR; a file of DIR replaced by a folder can) leaves the
 * files renamed so far; every file is checked to exist before the first
 * rename.
 *
 * Ownership: sc_outdir_open returns a handle that sc_outdir_close frees
 * (NULL ok); paths from sc_outdir_file belong to the handle.
 */
#ifndef SC_OUTDIR_H
#define SC_OUTDIR_H

#include "sc.h"

/* mkdir -p: creates dir and every missing parent (mode 0777 less the
 * umask). SC_OK when dir already is a folder. Errors: SC_EINVAL for an empty
 * path or one longer than 4095 bytes; SC_EIO naming the component that
 * failed: "PATH: exists and is not a folder" (a file, say, where a folder of
 * the path should be) or "PATH: cannot create folder: REASON" (strerror).
 * Folders created before the failure are left in place. O(length) system
 * calls. */
sc_status sc_mkdir_p(const char *dir, sc_error *err);

typedef struct sc_outdir sc_outdir;

/* Creates dir (sc_mkdir_p) and a staging folder DIR/.TAG.tmpXXXXXX in it
 * (tag: a short name without '/', e.g. "whatif"). On error *out is NULL and
 * nothing but the folders sc_mkdir_p made is left. */
sc_status sc_outdir_open(const char *dir, const char *tag, sc_outdir **out, sc_error *err);

/* Adds NAME (a plain file name: not empty, no '/', not "." or "..", not
 * added before) to the set and sets *path to where to write it (in the
 * staging folder). SC_EINVAL for a bad or repeated name, SC_ENOMEM. */
sc_status sc_outdir_file(sc_outdir *d, const char *name, const char **path, sc_error *err);

/* The folder the files go to, as given to sc_outdir_open. */
const char *sc_outdir_dir(const sc_outdir *d);

/* Ends the set: when st is SC_OK, checks that every added file was written
 * (else SC_EIO "DIR/NAME: was not written") and renames each into DIR (in
 * the order added); otherwise, or on that failure, renames nothing. Then
 * removes the staging folder and what is left in it, and frees d. Messages
 * in err that name a staging path are rewritten to name DIR instead.
 * Returns st, or the commit's own error. d == NULL returns st. */
sc_status sc_outdir_close(sc_outdir *d, sc_status st, sc_error *err);

#endif
