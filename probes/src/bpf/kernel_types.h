/* Kernel types the probes read, declared minimally for CO-RE.
 *
 * Instead of a multi-megabyte generated vmlinux.h, only the fields the
 * programs touch are declared here, each struct marked preserve_access_index:
 * clang records every field access as a CO-RE relocation and the loader (aya)
 * resolves it against the running kernel's BTF (/sys/kernel/btf/vmlinux), so
 * the object works whatever the real layout of these structs is.
 */
#ifndef REDOCTOR_KERNEL_TYPES_H
#define REDOCTOR_KERNEL_TYPES_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef __u64 u64;
typedef __u32 u32;
typedef _Bool bool;
typedef int pid_t;

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LRU_HASH = 9,
};

enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
};

enum {
	BPF_F_MMAPABLE = (1U << 10), /* the map can be mmap()ed by user space */
};

/* Scheduler statistics the kernel keeps per task (CONFIG_SCHED_INFO). */
struct sched_info {
	unsigned long long run_delay; /* ns waited on a run queue, cumulative */
	unsigned long long last_arrival; /* run-queue clock when it last got a CPU, ns */
} __attribute__((preserve_access_index));

/* CFS's per-task entity: the task's CPU time as the scheduler accounts it. */
struct sched_entity {
	unsigned long long sum_exec_runtime; /* ns on CPU, cumulative */
} __attribute__((preserve_access_index));

/* A process's open files: descriptor -> file -> inode, to key I/O by the
 * file a descriptor names at the call (with follow_children). */
struct super_block {
	unsigned int s_dev; /* dev_t, the kernel's encoding (major << 20 | minor) */
} __attribute__((preserve_access_index));

struct inode {
	unsigned long i_ino;
	struct super_block *i_sb;
} __attribute__((preserve_access_index));

struct file {
	struct inode *f_inode;
} __attribute__((preserve_access_index));

struct fdtable {
	unsigned int max_fds;
	struct file **fd; /* current fd array */
} __attribute__((preserve_access_index));

struct files_struct {
	struct fdtable *fdt;
} __attribute__((preserve_access_index));

struct task_struct {
	pid_t pid;
	pid_t tgid;
	struct sched_info sched_info;
	struct sched_entity se;
	unsigned long long start_time; /* CLOCK_MONOTONIC ns at fork */
	struct files_struct *files;
} __attribute__((preserve_access_index));

/* x86-64 register file as saved on kernel entry (uprobe context, and a
 * task's user registers at syscall entry: `orig_ax` is the syscall number). */
struct pt_regs {
	unsigned long r15;
	unsigned long r14;
	unsigned long r13;
	unsigned long r12;
	unsigned long bp;
	unsigned long bx;
	unsigned long r11;
	unsigned long r10;
	unsigned long r9;
	unsigned long r8;
	unsigned long ax;
	unsigned long cx;
	unsigned long di;
	unsigned long si;
	unsigned long dx;
	unsigned long orig_ax;
} __attribute__((preserve_access_index));

/* Raw tracepoint context: the tracepoint's TP_PROTO arguments. */
struct bpf_raw_tracepoint_args {
	__u64 args[0];
};

#endif
