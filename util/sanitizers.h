// SWAN_UNDER_ASAN: defined when this unit is compiled with AddressSanitizer
// (GCC says so by __SANITIZE_ADDRESS__, Clang by __has_feature).
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define SWAN_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SWAN_UNDER_ASAN 1
#endif
#endif
