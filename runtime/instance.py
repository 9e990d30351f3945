"""The process-wide Vulkan instance: loader discovery, lavapipe fallback, validation messages.

With VKIR_VALIDATION=1 the Khronos validation layer is enabled (synchronization validation included,
with its shader-accesses heuristic: SETTINGS) and a debug-utils messenger collects every warning and
error it emits into `Instance.messages`, each with its message id, e.g.
"[error] [SYNC-HAZARD-WRITE-AFTER-WRITE (id 0x5c0ec5d6)] ..." (tests fail on any; the CLI prints
them).
If the loader finds no physical device and the user did not choose ICDs, the instance is re-created
with the ICD manifests installed under the standard `icd.d` folders (the loader reads
VK_ICD_FILENAMES / VK_DRIVER_FILES when an instance is created), so lavapipe is found without the
user setting anything; that fallback is never silent: a RuntimeWarning says which drivers were
used (and `Instance.note` keeps the sentence for the command line).
"""

from __future__ import annotations

import atexit
import glob
import os
import sys
import threading
import warnings

from vkir import config
from vkir.errors import DeviceError

from ._vk import call, cstr, ffi, vk
from .layer_settings import LAYER_DIRS, SETTINGS, settings_environment
from .lifetime import Lifetime

VALIDATION_LAYER = "VK_LAYER_KHRONOS_validation"
ICD_DIRS = ("/usr/share/vulkan/icd.d", "/usr/local/share/vulkan/icd.d", "/etc/vulkan/icd.d")
API_VERSION = vk.VK_MAKE_VERSION(1, 3, 0)
SHUTDOWN_WAIT = 5.0   # seconds shutdown waits for devices being opened on the instance

_SEVERITY = {
    vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT: "warning",
    vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT: "error",
}


def validation_requested() -> bool:
    """True when $VKIR_VALIDATION asks for the Khronos validation layer."""
    return config.validation()


class Instance:
    """A VkInstance plus its physical devices and (with validation) a message collector.

    `lifetime` guards what uses the VkInstance itself (opening a device, querying physical
    devices); the devices opened on it register their `close` with `on_close`, and `shutdown()`
    closes them before the VkInstance is destroyed."""

    def __init__(self, validation: bool):
        self.validation = validation
        self.lifetime = Lifetime(self._refuse)
        self._closers: list = []   # close() of every device opened on this instance
        self.messages: list[str] = []
        self._lock = threading.Lock()
        self._messenger = None
        self._callback = None
        self.note = ""  # set when the ICD fallback below was needed
        self.abandoned = False  # a device was closed with work still running: never destroyed
        self.handle = self._create()
        self.physical_devices = self._enumerate()
        if not self.physical_devices and not _user_chose_icds():
            manifests = icd_manifests()
            if manifests:
                if self.handle is not None:
                    self._destroy()
                self.messages.clear()  # the loader's "found no drivers" is handled right here
                os.environ["VK_ICD_FILENAMES"] = os.pathsep.join(manifests)
                os.environ["VK_DRIVER_FILES"] = os.pathsep.join(manifests)
                self.handle = self._create()
                self.physical_devices = self._enumerate()
                if self.physical_devices:
                    self.note = ("the Vulkan loader found no device; using the drivers installed in "
                                 f"{', '.join(sorted({os.path.dirname(m) for m in manifests}))} "
                                 f"({', '.join(os.path.basename(m) for m in manifests)})")
                    warnings.warn(f"vkir: {self.note}", RuntimeWarning, stacklevel=2)
        if self.handle is None:
            raise DeviceError("vkCreateInstance failed: VK_ERROR_INCOMPATIBLE_DRIVER (no Vulkan driver "
                              "found; install mesa-vulkan-drivers for lavapipe)")

    def _enumerate(self) -> list:
        if self.handle is None:
            return []
        return list(call("vkEnumeratePhysicalDevices", vk.vkEnumeratePhysicalDevices, self.handle))

    # -- creation ---------------------------------------------------------------------------
    def _create(self):
        """A new VkInstance, or None where the loader finds no driver at all."""
        layers, extensions, sync = [], [], False
        if self.validation:
            if VALIDATION_LAYER not in _layers() and not os.environ.get("VK_LAYER_PATH"):
                folders = [d for d in LAYER_DIRS if os.path.isdir(d)]
                os.environ["VK_LAYER_PATH"] = os.pathsep.join(folders)
            if VALIDATION_LAYER not in _layers():
                raise DeviceError(f"VKIR_VALIDATION is set but {VALIDATION_LAYER} is not installed "
                                  "(Debian: apt install vulkan-validationlayers)")
            layers.append(VALIDATION_LAYER)
            for key, value in settings_environment().items():
                os.environ.setdefault(key, value)  # read by the layer at vkCreateInstance
            extensions.append(vk.VK_EXT_DEBUG_UTILS_EXTENSION_NAME)
            layer_exts = {cstr(e.extensionName) for e in
                          vk.vkEnumerateInstanceExtensionProperties(VALIDATION_LAYER)}
            sync = "VK_EXT_validation_features" in layer_exts
            if sync:
                extensions.append("VK_EXT_validation_features")
        app = vk.VkApplicationInfo(pApplicationName="vkir", applicationVersion=1, pEngineName="vkir",
                                   engineVersion=1, apiVersion=API_VERSION)
        messenger_info = self._messenger_info() if self.validation else None
        head = ffi.addressof(messenger_info) if messenger_info is not None else ffi.NULL
        if messenger_info is not None and "VK_EXT_layer_settings" in (layer_exts if self.validation else ()):
            extensions.append("VK_EXT_layer_settings")
            head = self._layer_settings(head)
        if messenger_info is not None and sync:
            # synchronization validation too: a missing barrier is a bug like any other
            self._enables = ffi.new("VkValidationFeatureEnableEXT[]", [
                vk.VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT])
            self._features = ffi.new("VkValidationFeaturesEXT*", {
                "sType": vk.VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
                "pNext": head,
                "enabledValidationFeatureCount": 1, "pEnabledValidationFeatures": self._enables})
            head = self._features
        info = vk.VkInstanceCreateInfo(
            pNext=head,
            pApplicationInfo=app,
            enabledLayerCount=len(layers), ppEnabledLayerNames=layers,
            enabledExtensionCount=len(extensions), ppEnabledExtensionNames=extensions)
        try:
            handle = vk.vkCreateInstance(info, None)
        except vk.VkErrorIncompatibleDriver:
            handle = None
        except (vk.VkError, vk.VkException) as exc:
            raise DeviceError(f"vkCreateInstance failed: {type(exc).__name__}") from None
        if handle is not None and self.validation:
            create = vk.vkGetInstanceProcAddr(handle, "vkCreateDebugUtilsMessengerEXT")
            self._messenger = create(handle, messenger_info, None)
        return handle

    def _layer_settings(self, head):
        """`head` behind a VkLayerSettingsCreateInfoEXT that turns on the validation layer's
        SETTINGS (VK_EXT_layer_settings)."""
        values = ffi.new("VkBool32[]", [1] * len(SETTINGS))
        settings = ffi.new("VkLayerSettingEXT[]", len(SETTINGS))
        names = [ffi.new("char[]", n.encode()) for n in (VALIDATION_LAYER, *SETTINGS)]
        for i in range(len(SETTINGS)):
            settings[i].pLayerName = names[0]
            settings[i].pSettingName = names[i + 1]
            settings[i].type = vk.VK_LAYER_SETTING_TYPE_BOOL32_EXT
            settings[i].valueCount = 1
            settings[i].pValues = ffi.addressof(values, i)
        info = ffi.new("VkLayerSettingsCreateInfoEXT*", {
            "sType": vk.VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT, "pNext": head,
            "settingCount": len(SETTINGS), "pSettings": settings})
        self._settings_keepalive = (values, settings, names, info)
        return info

    def _messenger_info(self):
        def on_message(severity, types, data, user_data):
            text = ffi.string(data.pMessage).decode(errors="replace") if data.pMessage else ""
            ident = ffi.string(data.pMessageIdName).decode(errors="replace") \
                if data.pMessageIdName else ""
            label = f"{ident} (id {data.messageIdNumber & 0xFFFFFFFF:#010x})" if ident else \
                f"id {data.messageIdNumber & 0xFFFFFFFF:#010x}"
            with self._lock:
                self.messages.append(f"[{_SEVERITY.get(severity, severity)}] [{label}] {text}")
            return vk.VK_FALSE

        self._callback = ffi.callback("PFN_vkDebugUtilsMessengerCallbackEXT", on_message)
        info = ffi.new("VkDebugUtilsMessengerCreateInfoEXT*")
        info.sType = vk.VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT
        info.messageSeverity = sum(_SEVERITY)
        info.messageType = (vk.VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT
                            | vk.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT
                            | vk.VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT)
        info.pfnUserCallback = self._callback
        self._info_keepalive = info
        return info[0]

    def _destroy(self):
        if self._messenger is not None:
            destroy = vk.vkGetInstanceProcAddr(self.handle, "vkDestroyDebugUtilsMessengerEXT")
            destroy(self.handle, self._messenger, None)
            self._messenger = None
        vk.vkDestroyInstance(self.handle, None)
        self.handle = None

    # -- lifetime ---------------------------------------------------------------------------
    def _refuse(self) -> None:
        raise DeviceError("the Vulkan instance was shut down (vkir.runtime.shutdown()) while a "
                          "device was being opened on it; open the device again")

    def on_close(self, fn) -> None:
        """Register `fn` (a device's close) to run, LIFO, before the VkInstance is destroyed."""
        with self._lock:
            self._closers.append(fn)

    def shutdown(self) -> list[str]:
        """Refuse new devices, wait for the ones being opened, close every device (each waits
        for the operations in flight on it), then destroy the VkInstance unless a device had to
        be abandoned with work still running. The validation messages not yet taken."""
        drained = self.lifetime.close(SHUTDOWN_WAIT)
        while True:
            with self._lock:
                if not self._closers:
                    break
                fn = self._closers.pop()
            fn()
        if self.handle is None:
            return []
        left = self.take_messages()
        if drained and not self.abandoned:  # a device closed with work running keeps the driver busy
            self._destroy()
        return left

    # -- messages ---------------------------------------------------------------------------
    def take_messages(self) -> list[str]:
        """The validation messages collected since the last call (and forget them)."""
        with self._lock:
            out, self.messages = self.messages, []
        return out


def _layers() -> set:
    return {cstr(p.layerName) for p in vk.vkEnumerateInstanceLayerProperties()}


def _user_chose_icds() -> bool:
    return any(os.environ.get(k) for k in ("VK_ICD_FILENAMES", "VK_DRIVER_FILES", "VK_ADD_DRIVER_FILES"))


def icd_manifests() -> list[str]:
    """ICD manifest files in the standard folders, lavapipe (lvp) first."""
    found = []
    for folder in ICD_DIRS:
        found.extend(sorted(glob.glob(os.path.join(folder, "*.json"))))
    return sorted(found, key=lambda p: (0 if "lvp" in os.path.basename(p) else 1, p))


_state: dict = {}
_state_lock = threading.Lock()


def get_instance() -> Instance:
    """The process-wide instance, created on first use (validation read from VKIR_VALIDATION)."""
    inst = _state.get("instance")
    if inst is None:
        with _state_lock:
            inst = _state.get("instance")
            if inst is None:
                inst = Instance(validation_requested())
                _state["instance"] = inst
                atexit.register(shutdown)
    return inst


_fork_hooks: list = []


def on_fork_in_child(fn) -> None:
    """Register `fn` to run in the child after os.fork(), to forget the parent's Vulkan objects."""
    _fork_hooks.append(fn)


def _forget_after_fork() -> None:
    """In a forked child nothing of the parent's Vulkan state is usable (the driver's threads and
    the loader's locks stay behind): forget it, so that the first use opens a new instance."""
    global _state_lock
    _state_lock = threading.Lock()
    _state.clear()
    for fn in _fork_hooks:
        fn()


os.register_at_fork(after_in_child=_forget_after_fork)


def shutdown() -> list[str]:
    """Close every device of the process-wide instance and destroy it (Instance.shutdown): calls
    in flight on other threads finish first, later ones raise DeviceError, and the next use opens
    a new instance. Returns the validation messages not yet taken (printed to stderr as well:
    nobody else will see them)."""
    with _state_lock:
        inst = _state.pop("instance", None)
    if inst is None:
        return []
    left = inst.shutdown()
    for m in left:
        print(f"vkir: validation message at shutdown: {m}", file=sys.stderr)
    return left
