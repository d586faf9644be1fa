/* tuning.h — the thresholds by which the code generator builds and
 * compares the candidate programs of a kernel (the cheapest program, by
 * its operations per call, is written) and sizes the work arrays of the
 * emitted code. Each says why it has its value; changing one changes
 * emitted code, never the values it computes beyond rounding. */
#ifndef CH_TUNING_H
#define CH_TUNING_H

/* The largest DAG of an entry M*_ii that diagonal_outputs brings into
 * normal form (which expands it). */
#define DIAG_MAX_NODES 300

/* The factored symbolic candidates are not built when the plain program
 * has more than this many times the operations of the best other
 * candidate: they could not win unless factoring removed all but 1/8 of
 * the operations, and on the n-trailer, where the plain one is 30 times
 * the substituted one at N = 100, it removed 4/5 (call_cost 220 246 ->
 * 42 168) for more than half of the emit time. */
#define SYM_FACTOR_GAIN 8

/* The symbolic candidate is not built at all when its outputs have more
 * distinct nodes than this many times the operations of the best other
 * candidate. Its plain program has 0.6 to 1.6 times as many operations as
 * its outputs have nodes (the examples, the n-trailer) and factoring
 * removed at most 4/5 of them, so it would cost over 3 times the other.
 * On the n-trailer its nodes grow as N^2 (2 107 at N = 10, 535 437 at
 * N = 200: 138 times the substituted candidate's operations), and its
 * CSE was a quarter of the 200-trailer's `emit --form all`. */
#define SYM_SKIP_GAIN 32

/* A candidate program of a kernel (emit_c.c's ch_em_kernel) is not built when its outputs' DAG has
 * more than this many nodes per unit of the cheapest program's cost
 * built so far (call_cost), plus KERNEL_PRUNE_SLACK: on the large models
 * measured a program costs at least 0.8 per DAG node (kn_dyn of the
 * 100-trailer: plain 81691 for 97960 nodes, factored 111484 for 92517
 * and 32510 for 28468), so it could not win, and kn_dyn's CSE builds were
 * the largest part of `emit --form full`. The slack keeps every candidate
 * of the small models, whose cost per node varies most. */
#define KERNEL_PRUNE_RATIO 2
#define KERNEL_PRUNE_SLACK 64

/* The closed form's outputs are not built for kn_ham, kn_eta and kn_en
 * where their DAG has more than this many nodes per unit of the Kane
 * form's program cost (call_cost): that program was the cheaper on every
 * model tried (the examples, the n-trailer), the closed form's CSE is the
 * largest of `emit --form hamilton`, and its DAG grows as N^2 on the
 * n-trailer (y*_t of the 10-trailer: 1970 nodes against 1269, of the
 * 24-trailer 9215 against 2977). */
#define KANE_CLOSED_MAX_RATIO 2

/* Largest m for which ch_emit_spd_solve unrolls the solve. */
#define CH_SPD_UNROLL_MAX 8

/* Work arrays of more than this many elements in one declaration are
 * static (one copy per compiled system; its functions are then not
 * reentrant, PREFIX_REENTRANT 0), so that no stack array grows with the
 * model: a thread's stack may be as small as 64 KB (16 KB here). */
#define CH_STACK_ELEMS 2048

#endif
