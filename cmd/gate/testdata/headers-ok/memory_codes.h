/* A header fixture: the codes of the memory store (spec/memory.yaml) as a
 * C SDK would declare them. */
#pragma once
enum class MemoryCode : int {
    OK = 0,          // the call succeeded
    NOT_FOUND = -1,  // no object under the key
    PENDING = -2,    // another writer holds the key
    FULL = -3,
    CORRUPT = -4,
    IO_ERROR = -5,
};
