// glibcCompat.cc: two definitions that keep the addon's symbol requirements at glibc 2.17 and
// libstdc++ 3.4.21 (GCC 5) when built with a current GCC (see glibcCompat.h, native/README.md).
#include <new>

#if defined(__linux__) && defined(__GLIBC__)
// libstdc++ (GCC >= 11) headers read glibc's __libc_single_threaded (GLIBC_2.32) to skip atomic
// reference counting in a single-threaded process. A hidden local copy that always says "not
// single-threaded" keeps the atomic path (always correct) and drops the GLIBC_2.32 requirement.
extern "C" {
__attribute__((visibility("hidden"))) char __libc_single_threaded = 0;
}
#endif

namespace std {
// GCC >= 11 emits calls to this for `new T[n]` (GLIBCXX_3.4.29, libstdc++ of GCC 11). A hidden
// local definition with the same behaviour keeps older libstdc++ (GCC >= 5) sufficient.
__attribute__((visibility("hidden"), noreturn)) void __throw_bad_array_new_length() { throw std::bad_array_new_length(); }
}  // namespace std
