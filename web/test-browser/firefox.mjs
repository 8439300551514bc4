// firefox.mjs - Debian's Firefox ESR for the training test, driven over WebDriver BiDi by
// puppeteer-core, with the same background-network preferences as editor.firefox.mjs (a test
// must not talk to the outside; the machine may have no network).
export const FIREFOX = process.env.BF_FIREFOX || '/usr/bin/firefox-esr';

export const PREFS = {
  'app.update.enabled': false,
  'app.update.auto': false,
  'app.normandy.enabled': false,
  'app.shield.optoutstudies.enabled': false,
  'browser.shell.checkDefaultBrowser': false,
  'browser.startup.homepage_override.mstone': 'ignore',
  'browser.aboutwelcome.enabled': false,
  'browser.safebrowsing.malware.enabled': false,
  'browser.safebrowsing.phishing.enabled': false,
  'browser.safebrowsing.downloads.enabled': false,
  'browser.safebrowsing.downloads.remote.enabled': false,
  'browser.safebrowsing.blockedURIs.enabled': false,
  'browser.safebrowsing.provider.mozilla.updateURL': '',
  'browser.safebrowsing.provider.google4.updateURL': '',
  'browser.newtabpage.enabled': false,
  'browser.newtabpage.activity-stream.feeds.topsites': false,
  'browser.newtabpage.activity-stream.feeds.snippets': false,
  'browser.newtabpage.activity-stream.feeds.section.topstories': false,
  'browser.search.update': false,
  'browser.search.geoip.url': '',
  'browser.region.network.url': '',
  'browser.region.update.enabled': false,
  'browser.ping-centre.telemetry': false,
  'browser.topsites.contile.enabled': false,
  'captivedetect.canonicalURL': '',
  'datareporting.healthreport.uploadEnabled': false,
  'datareporting.policy.dataSubmissionEnabled': false,
  'datareporting.usage.uploadEnabled': false,
  'toolkit.telemetry.enabled': false,
  'toolkit.telemetry.unified': false,
  'toolkit.telemetry.archive.enabled': false,
  'toolkit.telemetry.server': '',
  'toolkit.coverage.opt-out': true,
  'extensions.update.enabled': false,
  'extensions.getAddons.cache.enabled': false,
  'extensions.blocklist.enabled': false,
  'extensions.systemAddon.update.enabled': false,
  'geo.provider.network.url': '',
  'media.gmp-manager.url': '',
  'media.gmp-gmpopenh264.enabled': false,
  'network.captive-portal-service.enabled': false,
  'network.connectivity-service.enabled': false,
  'network.dns.disablePrefetch': true,
  'network.http.speculative-parallel-limit': 0,
  'network.prefetch-next': false,
  'network.trr.mode': 5,
  'security.OCSP.enabled': 0,
  'services.settings.server': 'http://127.0.0.1:9/',
  'services.sync.enabled': false,
  'identity.fxaccounts.enabled': false,
  'messaging-system.rsexperimentloader.enabled': false,
  'privacy.sanitize.sanitizeOnShutdown': false,
};

/** Firefox headless with a fresh profile in `profile`. */
export async function launchFirefox(profile) {
  const {default: puppeteer} = await import('puppeteer-core');
  return puppeteer.launch({
    browser: 'firefox', executablePath: FIREFOX, headless: true, userDataDir: profile,
    extraPrefsFirefox: PREFS, protocolTimeout: 120000, timeout: 60000,
    env: {...process.env, MOZ_CRASHREPORTER_DISABLE: '1'},
  });
}
