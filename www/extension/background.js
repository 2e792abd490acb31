// The extension's service worker only opens the side panel from the toolbar button: the model runs in the
// panel page (a service worker may be stopped at any time and has no WebGPU).
chrome.sidePanel.setPanelBehavior({ openPanelOnActionClick: true }).catch((e) => console.error(e));
