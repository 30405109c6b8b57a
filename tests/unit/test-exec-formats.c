/* Unit tests for the formats shared by boxd and boxd-shim: fields, the
 * spec, the exit record, UTF-8 cleaning, signal names. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "exit-record.h"
#include "fields.h"
#include "shim-spec.h"
#include "utf8.h"

#include "check.h"

static void test_utf8(void)
{
	size_t n;
	char *s = utf8_sanitize("a\xff"
				"b\xc3\x28"
				"\xe2\x82\xac\x00z",
				10, &n);
	CHECK(!strcmp(s, "a\xef\xbf\xbd"
			 "b\xef\xbf\xbd(\xe2\x82\xac\xef\xbf\xbdz"));
	free(s);
	/* Overlong, surrogate and beyond U+10FFFF forms are invalid. */
	s = utf8_sanitize("\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80", 9, NULL);
	CHECK(!strstr(s, "\xc0") && !strstr(s, "\xed\xa0") && !strstr(s, "\xf4\x90"));
	free(s);
	CHECK(utf8_prefix_length("ab\xe2\x82", 4) == 2);
	CHECK(utf8_prefix_length("ab\xe2\x82\xac", 5) == 5);
	CHECK(utf8_prefix_length("ab\xf0\x9f\x98", 5) == 2);
	CHECK(utf8_prefix_length("abc", 3) == 3);
	CHECK(utf8_prefix_length("", 0) == 0);
	/* What a JSON string carries as it is: no invalid byte, no NUL, no
	 * character cut short. */
	CHECK(utf8_valid_prefix("ab\xe2\x82\xac", 5) == 5);
	CHECK(utf8_valid_prefix("ab\xff"
				"cd",
				5) == 2);
	CHECK(utf8_valid_prefix("ab\0cd", 5) == 2);
	CHECK(utf8_valid_prefix("ab\xe2\x82", 4) == 2);
	CHECK(utf8_valid_prefix("\xed\xa0\x80", 3) == 0);
	CHECK(utf8_valid_prefix("", 0) == 0);
	/* Past the 8-byte ASCII steps: a NUL or a high byte inside a word. */
	CHECK(utf8_valid_prefix("abcdefghij\0klmnopq", 18) == 10);
	CHECK(utf8_valid_prefix("abcdefgh\xc3\xa9ijklmnop", 18) == 18);
	CHECK(utf8_valid_prefix("abcdefgh\xc3(ijklmnop", 18) == 8);
	CHECK(utf8_skip_partial("\x82\xac"
				"z",
				3) == 2);
	CHECK(utf8_skip_partial("z", 1) == 0);
}

static void test_fields(void)
{
	struct fields_writer w = {0};
	fields_add(&w, "bin", "a\nb\0c", 5);
	fields_add_int(&w, "n", -42);
	fields_add_string(&w, "empty", "");
	struct fields_reader r = {w.data, w.length, 0};
	const char *key, *value;
	size_t length;
	bool malformed;
	CHECK(fields_next(&r, &key, &value, &length, &malformed) && !strcmp(key, "bin") &&
	      length == 5 && !memcmp(value, "a\nb\0c", 5));
	CHECK(fields_next(&r, &key, &value, &length, &malformed) &&
	      fields_int(value, length, 0) == -42);
	CHECK(fields_next(&r, &key, &value, &length, &malformed) && length == 0);
	CHECK(!fields_next(&r, &key, &value, &length, &malformed) && !malformed);
	/* A length past the end is malformed, never a read past the buffer. */
	struct fields_reader bad = {"k 99\nabc\n", 9, 0};
	CHECK(!fields_next(&bad, &key, &value, &length, &malformed) && malformed);
	struct fields_reader no_space = {"k\n", 2, 0};
	CHECK(!fields_next(&no_space, &key, &value, &length, &malformed) && malformed);
	fields_writer_free(&w);
}

static void test_spec_round_trip(void)
{
	char *env[] = {"A=1", "B=two words"};
	char *secrets[] = {"hunter2hunter2"};
	gid_t groups[] = {4, 27};
	struct shim_spec spec = {
		.id = "c_1",
		.cmd = "echo 'x'\nexit 3",
		.cwd = "/work",
		.user = "root",
		.uid = 1000,
		.gid = 1000,
		.groups = groups,
		.group_count = 2,
		.env = env,
		.env_count = 2,
		.secrets = secrets,
		.secret_count = 1,
		.stdin_data = "in\0put",
		.stdin_length = 6,
		.timeout_ms = 600000,
		.max_output_bytes = 262144,
		.state_dir = "/run/boxd/procs/c_1",
		.log_path = "/work/.sbx/logs/c_1.log",
		.log_cap_bytes = 1 << 29,
		.hold_output = true,
		.memory_max = 3ull << 30,
	};
	int fd = memfd_create("spec", 0);
	CHECK(shim_spec_write(&spec, fd));
	lseek(fd, 0, SEEK_SET);
	struct shim_spec back;
	char error[256];
	CHECK(shim_spec_read(&back, fd, error, sizeof error));
	CHECK(!strcmp(back.cmd, spec.cmd) && back.uid == 1000 && back.group_count == 2 &&
	      back.groups[1] == 27 && back.env_count == 2 && !strcmp(back.env[1], "B=two words") &&
	      back.stdin_length == 6 && !memcmp(back.stdin_data, "in\0put", 6) &&
	      back.hold_output && back.max_output_bytes == 262144 && !back.cgroup_base &&
	      back.memory_max == 3ull << 30);
	shim_spec_free(&back);
	/* Incomplete specs are refused with a sentence. */
	ftruncate(fd, 0);
	lseek(fd, 0, SEEK_SET);
	write(fd, "id 3\nc_1\n", 9);
	lseek(fd, 0, SEEK_SET);
	CHECK(!shim_spec_read(&back, fd, error, sizeof error) && strstr(error, "malformed"));
	close(fd);
}

/* A spare's preparation needs no command; a memfd is read from its start
 * whatever its offset (the shim and its seed read the same one at once). */
static void test_spec_preparation_and_shared_reads(void)
{
	struct shim_spec prepare = {
		.id = "c_00aa",
		.state_dir = "/run/boxd/procs/c_00aa",
		.log_path = "/work/.sbx/logs/c_00aa.log",
		.cgroup_base = "/sys/fs/cgroup/x",
		.pids_max = 1024,
		.log_cap_bytes = 1 << 29,
	};
	size_t length;
	char *data = shim_spec_format(&prepare, &length);
	struct shim_spec back;
	char error[256];
	CHECK(shim_spec_parse(&back, data, length, false, error, sizeof error));
	CHECK(!strcmp(back.id, "c_00aa") && !back.cmd &&
	      !strcmp(back.cgroup_base, "/sys/fs/cgroup/x") && back.pids_max == 1024);
	shim_spec_free(&back);
	/* As a command's spec it is incomplete. */
	CHECK(!shim_spec_parse(&back, data, length, true, error, sizeof error));
	free(data);
	prepare.cmd = "true";
	prepare.cwd = "/";
	int fd = memfd_create("spec", 0);
	CHECK(shim_spec_write(&prepare, fd));
	/* The offset sits at the end, as the writer left it: read twice. */
	CHECK(shim_spec_read(&back, fd, error, sizeof error) && !strcmp(back.cmd, "true"));
	shim_spec_free(&back);
	CHECK(shim_spec_read(&back, fd, error, sizeof error) && !strcmp(back.cwd, "/"));
	shim_spec_free(&back);
	close(fd);
}

static void test_meta_in_memory(void)
{
	struct shim_meta meta = {.id = "b_1",
				 .cmd = "sleep 1\n",
				 .cwd = "/w",
				 .user = "root",
				 .log_path = "/w/.sbx/logs/b_1.log",
				 .cgroup = "/sys/fs/cgroup/b/b_1",
				 .background = true,
				 .started_at = 1700000000001,
				 .timeout_ms = 5000,
				 .pid = 42,
				 .shim_pid = 41};
	size_t length;
	char *data = shim_meta_format(&meta, &length);
	struct shim_meta back;
	CHECK(shim_meta_parse(&back, data, length));
	CHECK(!strcmp(back.id, "b_1") && !strcmp(back.cmd, "sleep 1\n") && back.background &&
	      back.pid == 42 && back.shim_pid == 41 && back.started_at == 1700000000001 &&
	      !strcmp(back.cgroup, "/sys/fs/cgroup/b/b_1") && !back.pids_cgroup);
	shim_meta_free(&back);
	CHECK(!shim_meta_parse(&back, data, length - 3)); /* cut short: malformed */
	free(data);
}

/* A small result travels with its captures (bytes, NULs included). */
static void test_exit_record_with_captures(void)
{
	struct exit_record record = {.exit_code = 0,
				     .cpu_ms = 1,
				     .peak_memory_bytes = 5,
				     .oom_kills = EXIT_RECORD_UNKNOWN,
				     .has_captures = true,
				     .captures = {"out\0put\n", ""},
				     .capture_lengths = {8, 0}};
	size_t length;
	char *data = exit_record_format(&record, &length);
	struct exit_record back;
	CHECK(exit_record_parse(&back, data, length));
	CHECK(back.has_captures && back.capture_lengths[0] == 8 &&
	      !memcmp(back.captures[0], "out\0put\n", 8) && back.capture_lengths[1] == 0 &&
	      back.captures[1] && back.peak_memory_bytes == 5);
	exit_record_drop_captures(&back);
	CHECK(back.has_captures && !back.captures[0] && back.capture_lengths[0] == 8);
	exit_record_free(&back);
	free(data);
	/* Without them (big ones are files), none are claimed. */
	record.has_captures = false;
	data = exit_record_format(&record, &length);
	CHECK(exit_record_parse(&back, data, length) && !back.has_captures && !back.captures[0]);
	exit_record_free(&back);
	free(data);
}

/* A file filled through its temporary made ahead, then renamed. */
static void test_write_into(void)
{
	char dir[] = "/tmp/test-into-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	int dir_fd = open(dir, O_RDONLY | O_DIRECTORY);
	int fd = openat(dir_fd, "meta.tmp", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	struct fields_writer w = {0};
	fields_add_string(&w, "id", "c_1");
	CHECK(fields_write_into(&w, fd, dir_fd, "meta.tmp", "meta"));
	close(fd);
	char path[64];
	snprintf(path, sizeof path, "%s/meta", dir);
	size_t length;
	char *data = fields_read_file(path, 1024, &length);
	CHECK(data && length == w.length && !memcmp(data, w.data, length));
	free(data);
	snprintf(path, sizeof path, "%s/meta.tmp", dir);
	CHECK(access(path, F_OK) != 0);
	fields_writer_free(&w);
	unlinkat(dir_fd, "meta", 0);
	close(dir_fd);
	rmdir(dir);
}

static void test_exit_record(void)
{
	char path[] = "/tmp/test-exit-XXXXXX";
	int fd = mkstemp(path);
	close(fd);
	struct exit_record record = {.exit_code = 124,
				     .signal = SIGTERM,
				     .timed_out = true,
				     .cpu_ms = 12,
				     .peak_memory_bytes = EXIT_RECORD_UNKNOWN,
				     .oom_kills = 2,
				     .ended_at = 1700000000000,
				     .log_error = "disk full"};
	CHECK(exit_record_write(&record, path));
	struct exit_record back;
	CHECK(exit_record_read(&back, path));
	CHECK(back.exit_code == 124 && back.signal == SIGTERM && back.timed_out &&
	      back.cpu_ms == 12 && back.peak_memory_bytes == EXIT_RECORD_UNKNOWN &&
	      back.oom_kills == 2 && !strcmp(back.log_error, "disk full") && !back.message);
	exit_record_free(&back);
	/* A record without the field (an older shim's) reads as "cannot tell". */
	FILE *old = fopen(path, "w");
	CHECK(old && fputs("exitCode 3\n137\n", old) >= 0 && fclose(old) == 0);
	CHECK(exit_record_read(&back, path));
	CHECK(back.exit_code == 137 && back.oom_kills == EXIT_RECORD_UNKNOWN &&
	      back.peak_memory_bytes == EXIT_RECORD_UNKNOWN);
	exit_record_free(&back);
	unlink(path);
	CHECK(!strcmp(signal_name(SIGKILL), "SIGKILL") && !signal_name(0));
	CHECK(signal_number("SIGTERM") == SIGTERM && signal_number("term") == SIGTERM &&
	      signal_number("9") == 9 && signal_number("NOPE") == -1 && signal_number("99") == -1);
}

int main(void)
{
	test_utf8();
	test_fields();
	test_spec_round_trip();
	test_spec_preparation_and_shared_reads();
	test_meta_in_memory();
	test_exit_record();
	test_exit_record_with_captures();
	test_write_into();
	return check_done("exec-formats");
}
