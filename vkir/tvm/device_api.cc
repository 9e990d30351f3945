// vkir's tvm::runtime::DeviceAPI for kDLVulkan: TVM's runtime (tensors, copies, the Relax VM)
// calls these methods; each forwards to a Python function vkir registers under
// "vkir.tvm.device_api.<name>" (vkir/tvm/device_memory.py), where allocations are vkir device
// arrays behind opaque handles. Also the module of a compile's Vulkan kernels ("vkir_vulkan"):
// each kernel is its key, TVM's JSON and vkir's compiled SPIR-V with its dispatch description,
// run by "vkir.tvm.device_api.launch"; it saves to bytes, so export_library embeds it and
// load_module reads it back, and a loaded kernel runs without lowering or code generation.
// Built on first use against the installed wheel's own headers.
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/extra/module.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>
#include <tvm/runtime/device_api.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

using tvm::ffi::Any;
using tvm::ffi::Function;
using tvm::runtime::DeviceAPI;
using tvm::runtime::DeviceAttrKind;

Function Callback(const char* name) {
  std::string full = std::string("vkir.tvm.device_api.") + name;
  std::optional<Function> f = Function::GetGlobal(full);
  if (!f.has_value()) {
    TVM_FFI_THROW(RuntimeError) << "vkir's Vulkan device API lost its Python side (" << full
                                << "): call vkir.tvm.install() again";
  }
  return *f;
}

int64_t Handle(const void* ptr) { return static_cast<int64_t>(reinterpret_cast<intptr_t>(ptr)); }

class VkirDeviceAPI final : public DeviceAPI {
 public:
  void SetDevice(DLDevice dev) final { Callback("set_device")(dev.device_id); }

  void GetAttr(DLDevice dev, DeviceAttrKind kind, Any* rv) final {
    Any got = Callback("get_attr")(dev.device_id, static_cast<int>(kind));
    if (got != nullptr) *rv = got;
  }

  void* AllocDataSpace(DLDevice dev, size_t nbytes, size_t alignment,
                       DLDataType type_hint) final {
    int64_t h = Callback("alloc")(dev.device_id, static_cast<int64_t>(nbytes)).cast<int64_t>();
    return reinterpret_cast<void*>(static_cast<intptr_t>(h));
  }

  void FreeDataSpace(DLDevice dev, void* ptr) final { Callback("free")(Handle(ptr)); }

  void StreamSync(DLDevice dev, TVMStreamHandle stream) final {
    Callback("sync")(dev.device_id);
  }

  void* AllocWorkspace(DLDevice dev, size_t nbytes, DLDataType type_hint) final {
    return AllocDataSpace(dev, nbytes, 0, type_hint);
  }

  void FreeWorkspace(DLDevice dev, void* ptr) final { FreeDataSpace(dev, ptr); }

 protected:
  void CopyDataFromTo(const void* from, size_t from_offset, void* to, size_t to_offset,
                      size_t nbytes, DLDevice dev_from, DLDevice dev_to, DLDataType type_hint,
                      TVMStreamHandle stream) final {
    Callback("copy")(Handle(from), static_cast<int64_t>(from_offset),
                     static_cast<int>(dev_from.device_type), Handle(to),
                     static_cast<int64_t>(to_offset), static_cast<int>(dev_to.device_type),
                     static_cast<int64_t>(nbytes));
  }
};

// The kernels of one compile: name -> (key, TVM's JSON of the device PrimFunc, vkir's compiled
// kernel: its SPIR-V and dispatch description as compile-cache entries, JSON).
class KernelModule final : public tvm::ffi::ModuleObj {
 public:
  std::vector<std::string> names, keys, texts, builds;

  const char* kind() const final { return "vkir_vulkan"; }

  int GetPropertyMask() const final {
    return tvm::ffi::Module::kBinarySerializable | tvm::ffi::Module::kRunnable;
  }

  tvm::ffi::Optional<Function> GetFunction(const tvm::ffi::String& name) final {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] != std::string(name)) continue;
      tvm::ffi::String key(keys[i]), text(texts[i]), built(builds[i]);
      return Function::FromPacked([key, text, built](tvm::ffi::PackedArgs args, Any* rv) {
        std::vector<tvm::ffi::AnyView> all;
        all.reserve(args.size() + 3);
        all.emplace_back(key);
        all.emplace_back(text);
        all.emplace_back(built);
        for (int k = 0; k < args.size(); ++k) all.push_back(args[k]);
        Callback("launch").CallPacked(all.data(), static_cast<int32_t>(all.size()), rv);
      });
    }
    return std::nullopt;
  }

  tvm::ffi::Bytes SaveToBytes() const final {
    std::string out;
    auto put = [&out](const std::string& s) {
      uint64_t n = s.size();
      out.append(reinterpret_cast<const char*>(&n), sizeof(n));
      out.append(s);
    };
    put("vkir_vulkan 2");
    put(std::to_string(names.size()));
    for (size_t i = 0; i < names.size(); ++i) {
      put(names[i]);
      put(keys[i]);
      put(texts[i]);
      put(builds[i]);
    }
    return tvm::ffi::Bytes(out);
  }
};

tvm::ffi::Module LoadKernelModule(const tvm::ffi::Bytes& bytes) {
  const char* p = bytes.data();
  const char* end = p + bytes.size();
  auto get = [&p, end]() {
    uint64_t n = 0;
    if (end - p < static_cast<std::ptrdiff_t>(sizeof(n))) {
      TVM_FFI_THROW(RuntimeError) << "vkir: a truncated Vulkan kernel module";
    }
    std::memcpy(&n, p, sizeof(n));
    p += sizeof(n);
    if (static_cast<uint64_t>(end - p) < n) {
      TVM_FFI_THROW(RuntimeError) << "vkir: a truncated Vulkan kernel module";
    }
    std::string s(p, n);
    p += n;
    return s;
  };
  auto m = tvm::ffi::make_object<KernelModule>();
  if (get() != "vkir_vulkan 2") {
    TVM_FFI_THROW(RuntimeError) << "vkir: a Vulkan kernel module written by another vkir "
                                   "version: export the library again";
  }
  size_t count = std::stoul(get());
  for (size_t i = 0; i < count; ++i) {
    m->names.push_back(get());
    m->keys.push_back(get());
    m->texts.push_back(get());
    m->builds.push_back(get());
  }
  return tvm::ffi::Module(m);
}

tvm::ffi::Module MakeKernelModule(tvm::ffi::Array<tvm::ffi::String> names,
                                  tvm::ffi::Array<tvm::ffi::String> keys,
                                  tvm::ffi::Array<tvm::ffi::String> texts,
                                  tvm::ffi::Array<tvm::ffi::String> builds) {
  auto m = tvm::ffi::make_object<KernelModule>();
  for (size_t i = 0; i < names.size(); ++i) {
    m->names.push_back(names[i]);
    m->keys.push_back(keys[i]);
    m->texts.push_back(texts[i]);
    m->builds.push_back(builds[i]);
  }
  return tvm::ffi::Module(m);
}

}  // namespace

// Registers "device_api.vulkan" (the global TVM's DeviceAPIManager looks up for kDLVulkan), the
// loader of saved kernel modules and "vkir.tvm.kernel_module" (names, keys, JSON texts, builds).
extern "C" int vkir_tvm_register_device_api() {
  static VkirDeviceAPI* api = new VkirDeviceAPI();   // lives as long as the process
  Function::SetGlobal("device_api.vulkan",
                      Function::FromTyped([]() -> void* { return api; }), true);
  Function::SetGlobal("ffi.Module.load_from_bytes.vkir_vulkan",
                      Function::FromTyped(LoadKernelModule), true);
  Function::SetGlobal("vkir.tvm.kernel_module", Function::FromTyped(MakeKernelModule), true);
  return 0;
}
