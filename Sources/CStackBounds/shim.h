// The current thread's stack bounds, for HubPipeline's StackSpace: glibc's
// pthread_getattr_np is a GNU extension that Swift's Glibc module does not export.
#ifndef HUB_CSTACKBOUNDS_SHIM_H
#define HUB_CSTACKBOUNDS_SHIM_H

#include <pthread.h>
#include <stddef.h>

extern int pthread_getattr_np(pthread_t thread, pthread_attr_t *attr);

/// The lowest address and the size of the calling thread's stack; 0 on success.
static inline int hub_current_stack_bounds(void **lowest, size_t *size) {
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) != 0) return -1;
    int result = pthread_attr_getstack(&attributes, lowest, size);
    pthread_attr_destroy(&attributes);
    return result;
}

/// An address in the calling function's frame on the thread's own stack. Not the
/// address of a Swift local: AddressSanitizer may move those to a heap "fake stack".
__attribute__((noinline)) static void *hub_current_stack_position(void) {
    return __builtin_frame_address(0);
}

#endif
