// Methods outside the spec: every recording class's vtable is extended with kExtraSlots entries
// after the spec'd methods. An application compiled against headers that have more methods than
// the spec lands in one of them; a trampoline records an UNSUPPORTED call (interface and vtable
// slot) and jumps to the same slot of the real object, with every argument register untouched.
//
// x86-64 System V only (the library's platform). `this` is in rdi, or in rsi when the method
// returns a large struct through a hidden pointer in rdi; the first word of whichever register
// points at our object is one of our extended vtables, which is how the trampoline tells.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "session.h"
#include "shim.h"

namespace trtrace::capture {
namespace {

constexpr int kExtraSlots = 16;

struct SlotMeta {
  const char* iface;  // interface name
  int methods;        // spec'd methods (after the destructor pair)
  int level;          // chain level: the real object's V-pointer is realImpl(level)
};

// One extended vtable per recording class: [meta, offset-to-top, RTTI | dtor pair, methods, extras].
struct ExtVtable {
  std::vector<void*> words;
  SlotMeta meta;
};

std::mutex gMu;
std::map<const void*, ExtVtable*> gByOriginal;  // compiler vtable -> ours
std::vector<const void*> gOurs;                 // address points of our vtables (sorted)

}  // namespace

extern "C" void trtrace_slot_thunks();  // start of the kExtraSlots trampolines (below)

void* extendedVtable(const void* shimObject, const char* iface, const int32_t* since, int specMethods, int level) {
  // Deltas only append, so the loaded library's methods are a prefix of the spec's.
  const int32_t have = realLibrary().code;
  int methods = 0;
  while (methods < specMethods && (have == 0 || since[methods] <= have)) ++methods;
  const void* original = *static_cast<const void* const*>(shimObject);
  std::lock_guard<std::mutex> lk(gMu);
  auto it = gByOriginal.find(original);
  if (it == gByOriginal.end()) {
    auto* ext = new ExtVtable{};  // lives for the process
    ext->meta = {iface, methods, level};
    const void* const* orig = static_cast<const void* const*>(original);
    ext->words.push_back(&ext->meta);
    ext->words.push_back(const_cast<void*>(orig[-2]));  // offset to top
    ext->words.push_back(const_cast<void*>(orig[-1]));  // RTTI
    for (int i = 0; i < 2 + methods; ++i) ext->words.push_back(const_cast<void*>(orig[i]));
    for (int k = 0; k < kExtraSlots; ++k) ext->words.push_back(reinterpret_cast<char*>(&trtrace_slot_thunks) + 16 * k);
    it = gByOriginal.emplace(original, ext).first;
    gOurs.insert(std::upper_bound(gOurs.begin(), gOurs.end(), &ext->words[3]), &ext->words[3]);
  }
  return &it->second->words[3];
}

namespace {
bool isOurVtable(const void* vptr) {
  std::lock_guard<std::mutex> lk(gMu);
  return std::binary_search(gOurs.begin(), gOurs.end(), vptr);
}
}  // namespace

// Called by the trampolines. regs: the saved rax, r9, r8, rcx, rdx, rsi, rdi. Rewrites the
// register that holds our object to the real V-pointer, records the call, returns the target.
extern "C" __attribute__((used)) void* trtrace_unknown_slot(uint64_t* regs, uint64_t k) {
  for (int idx : {6, 5}) {  // rdi, then rsi (hidden struct-return pointer case)
    void* p = reinterpret_cast<void*>(regs[idx]);
    if (!p) continue;
    const void* vptr = *static_cast<const void* const*>(p);
    if (!isOurVtable(vptr)) continue;
    const auto* meta = static_cast<const SlotMeta*>(static_cast<const void* const*>(vptr)[-3]);
    Object* self = static_cast<Object**>(p)[1];  // recording classes: {vptr, Object* self}
    void* realV = self->realImpl(meta->level);
    const uint32_t slot = static_cast<uint32_t>(meta->methods + k);  // after the destructor pair
    {
      Call c(self, 0, false);
      c.record([&](CallEncoder& e) { e.unsupported(meta->iface, slot); });
    }
    regs[idx] = reinterpret_cast<uint64_t>(realV);
    return (*static_cast<void* const* const*>(realV))[2 + slot];
  }
  std::fprintf(stderr, "trtrace: fatal: a call through an unknown vtable slot without a recognisable object\n");
  std::abort();
}

}  // namespace trtrace::capture

// kExtraSlots trampolines of 16 bytes each: push the slot number, jump to the common part.
// The common part saves every argument register (and rax, the vector-register count of variadic
// calls), calls trtrace_unknown_slot with the stack 16-byte aligned, restores the registers with
// `this` replaced, and tail-jumps to the real method so its stack arguments and return address
// are exactly the caller's.
asm(R"(
    .text
    .p2align 4
    .globl trtrace_slot_thunks
    .hidden trtrace_slot_thunks
    .type trtrace_slot_thunks, @function
trtrace_slot_thunks:
    .irp k, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
    .p2align 4
    pushq $\k
    jmp trtrace_slot_common
    .endr
    .size trtrace_slot_thunks, .-trtrace_slot_thunks

    .p2align 4
    .type trtrace_slot_common, @function
trtrace_slot_common:
    pushq %rbp
    movq %rsp, %rbp
    pushq %rdi
    pushq %rsi
    pushq %rdx
    pushq %rcx
    pushq %r8
    pushq %r9
    pushq %rax
    subq $128, %rsp
    movdqu %xmm0, 0(%rsp)
    movdqu %xmm1, 16(%rsp)
    movdqu %xmm2, 32(%rsp)
    movdqu %xmm3, 48(%rsp)
    movdqu %xmm4, 64(%rsp)
    movdqu %xmm5, 80(%rsp)
    movdqu %xmm6, 96(%rsp)
    movdqu %xmm7, 112(%rsp)
    leaq 128(%rsp), %rdi
    movq 8(%rbp), %rsi
    call trtrace_unknown_slot@PLT
    movq %rax, %r11
    movdqu 0(%rsp), %xmm0
    movdqu 16(%rsp), %xmm1
    movdqu 32(%rsp), %xmm2
    movdqu 48(%rsp), %xmm3
    movdqu 64(%rsp), %xmm4
    movdqu 80(%rsp), %xmm5
    movdqu 96(%rsp), %xmm6
    movdqu 112(%rsp), %xmm7
    addq $128, %rsp
    popq %rax
    popq %r9
    popq %r8
    popq %rcx
    popq %rdx
    popq %rsi
    popq %rdi
    popq %rbp
    addq $8, %rsp
    jmp *%r11
    .size trtrace_slot_common, .-trtrace_slot_common
)");
