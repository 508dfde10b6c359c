// ts_simt_jump_fcontext (see fiber_context.h): Boost's jump_fcontext reached by a jump, so that
// the return-stack predictor stays balanced across fiber switches.
#include "instrumentation/simt/src/fiber_context.h"

#if defined(__x86_64__)
// On entry the stack holds our caller's return address. Pushing the landing label and jumping
// makes jump_fcontext save it as the place this context resumes (exactly what a call would
// have pushed), and the label's `ret` returns to our caller. (The push leaves the stack 8 bytes
// off a call's alignment; jump_fcontext only stores and loads 8-byte words there and undoes it
// on resumption.)
asm(R"(
    .pushsection .text
    .p2align 4
    .globl ts_simt_jump_fcontext
    .hidden ts_simt_jump_fcontext
    .type ts_simt_jump_fcontext, @function
ts_simt_jump_fcontext:
    leaq 1f(%rip), %rax
    pushq %rax
    jmp jump_fcontext@PLT
1:
    ret
    .size ts_simt_jump_fcontext, .-ts_simt_jump_fcontext
    .popsection
)");
#endif
