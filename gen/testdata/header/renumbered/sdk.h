// The same codes, one SDK version later: LEASE_EXPIRED is renumbered.
enum class ErrorCode : int32_t {
    OK = 0,
    INTERNAL_ERROR = -1,
    BUFFER_OVERFLOW = -10,
    OBJECT_NOT_FOUND = -704,
    OBJECT_ALREADY_EXISTS = -703,
    LEASE_EXPIRED = -708,
};
