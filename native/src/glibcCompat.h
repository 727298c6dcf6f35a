// glibcCompat.h: force-included (`-include`) in every translation unit of the addon and the
// simulated NCCL by native/build.mjs and by the agent's on-host build.
//
// glibc 2.34 moved dlopen/dlsym/… and pthread_* from libdl/libpthread into libc and gave them a
// new default version (GLIBC_2.34), so a plain build on a current distribution refuses to load
// on an older glibc. Binding these references to the architecture's base version (which every
// glibc still exports) keeps the prebuilt binaries loadable on old hosts: there, the symbol is
// found in libdl.so.2 / libpthread.so.0, which Node itself links. Objects built on the host
// itself are unaffected in behaviour (same functions, older version names).
#ifndef COMMCOST_GLIBC_COMPAT_H
#define COMMCOST_GLIBC_COMPAT_H
// No header is included here (that would fix the feature macros before the source sets them):
// glibc is recognised by one of its own headers being present.
#if defined(__linux__) && defined(__has_include)
#if __has_include(<gnu/libc-version.h>)
#define COMMCOST_GLIBC 1
#endif
#endif
#ifdef COMMCOST_GLIBC
#if defined(__x86_64__)
#define COMMCOST_GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define COMMCOST_GLIBC_BASE "GLIBC_2.17"
#endif
#ifdef COMMCOST_GLIBC_BASE
#define COMMCOST_OLD_SYMBOL(name) __asm__(".symver " #name "," #name "@" COMMCOST_GLIBC_BASE)
COMMCOST_OLD_SYMBOL(dlopen);
COMMCOST_OLD_SYMBOL(dlsym);
COMMCOST_OLD_SYMBOL(dlerror);
COMMCOST_OLD_SYMBOL(dladdr);
COMMCOST_OLD_SYMBOL(dlclose);
COMMCOST_OLD_SYMBOL(pthread_create);
COMMCOST_OLD_SYMBOL(pthread_detach);
COMMCOST_OLD_SYMBOL(pthread_join);
COMMCOST_OLD_SYMBOL(pthread_once);
COMMCOST_OLD_SYMBOL(pthread_attr_setstacksize);
COMMCOST_OLD_SYMBOL(pthread_key_create);
COMMCOST_OLD_SYMBOL(pthread_getspecific);
COMMCOST_OLD_SYMBOL(pthread_setspecific);
#undef COMMCOST_OLD_SYMBOL
#endif
#endif
#endif
