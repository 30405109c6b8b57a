/* ctl-files.h: what ctl-files.c (boxctl get) and ctl-files-ops.c (boxctl
 * files ...) share: `files get` is `get`. */
#ifndef BOXD_CTL_FILES_H
#define BOXD_CTL_FILES_H

struct ctl;

/* boxctl get PATH [-o FILE]; argv[0] is the command's name. */
int ctl_files_get(struct ctl *ctl, int argc, char **argv);
/* boxctl files SUBCOMMAND ...; argv[0] is "files". */
int ctl_files_run(struct ctl *ctl, int argc, char **argv);

#endif
