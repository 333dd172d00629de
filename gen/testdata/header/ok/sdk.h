// A fixture in the shape of an SDK's types.h.
#pragma once
#include <cstdint>

namespace sdk {

// A forward declaration and a string that mentions the enum are not it.
enum class ErrorCode : int32_t;
static const char *kDoc = "enum class ErrorCode : int32_t { OK = 5 }";

enum class Other { OK = 7, INTERNAL_ERROR = 8 };

/**
 * The codes, as the SDK answers them.
 * enum class ErrorCode { NOT_THIS = 1 };
 */
enum class ErrorCode : int32_t {
    OK = 0,  ///< success, = 0, with a comma
    INTERNAL_ERROR = -1,  // internal error
    /* buffers */
    BUFFER_OVERFLOW = -10,
#ifdef SDK_LEGACY
    // a preprocessor line inside the body is ignored
#endif
    OBJECT_NOT_FOUND = -(0x2C0),   // -704, written in hex
    OBJECT_ALREADY_EXISTS,         // -703: an implicit value
    LEASE_EXPIRED [[deprecated("renamed")]] = OBJECT_NOT_FOUND - 3,
};

}  // namespace sdk
