/* The same header, where an SDK release renumbered FULL. */
#pragma once
enum class MemoryCode : int {
    OK = 0,
    NOT_FOUND = -1,
    PENDING = -2,
    FULL = -30,
    CORRUPT = -4,
    IO_ERROR = -5,
};
