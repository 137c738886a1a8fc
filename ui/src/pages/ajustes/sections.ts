// Ajustes' sections, each its own page (#/ajustes/<id>), in the order of the inner navigation.
// A section is a list of parts: a settings component taking `disabled` (true when the acting
// role may not change the business's settings). Adding a part is one line in its section.
import type { Component } from 'svelte';
import type { MessageKey } from '../../lib/i18n/index.svelte';
import SeatSettings from '../../components/SeatSettings.svelte';
import RolePinSettings from '../../components/RolePinSettings.svelte';
import CredentialStoreNotice from '../../components/CredentialStoreNotice.svelte';
import EmisorSettings from '../../components/EmisorSettings.svelte';
import CsdRenewSettings from '../../components/CsdRenewSettings.svelte';
import EmisoresSettings from '../../components/EmisoresSettings.svelte';
import LogoSettings from '../../components/LogoSettings.svelte';
import PacSettings from '../../components/PacSettings.svelte';
import SandboxFaultSettings from '../../components/SandboxFaultSettings.svelte';
import DrainSettings from '../../components/DrainSettings.svelte';
import DatabaseSettings from '../../components/DatabaseSettings.svelte';
import BackupSettings from '../../components/BackupSettings.svelte';
import ChannelSettings from '../../components/ChannelSettings.svelte';
import ScreeningSettings from '../../components/ScreeningSettings.svelte';
import AppearanceSettings from '../../components/AppearanceSettings.svelte';
import UpdateSettings from '../../components/UpdateSettings.svelte';
import AboutTimbra from '../../components/AboutTimbra.svelte';

export type SettingsPart = Component<{ disabled?: boolean }>;

export interface SettingsSection {
  id: string;
  title: MessageKey;
  parts: SettingsPart[];
}

export const SECTIONS: SettingsSection[] = [
  { id: 'equipo', title: 'ajustes.section.equipo', parts: [SeatSettings, RolePinSettings] },
  { id: 'emisor', title: 'ajustes.section.emisor', parts: [CredentialStoreNotice, EmisorSettings, CsdRenewSettings, LogoSettings] },
  { id: 'emisores', title: 'ajustes.section.emisores', parts: [EmisoresSettings] },
  { id: 'pac', title: 'ajustes.section.pac', parts: [CredentialStoreNotice, PacSettings, SandboxFaultSettings, DrainSettings] },
  { id: 'base', title: 'ajustes.section.base', parts: [DatabaseSettings] },
  { id: 'respaldos', title: 'ajustes.section.respaldos', parts: [BackupSettings] },
  { id: 'correo', title: 'ajustes.section.correo', parts: [ChannelSettings] },
  { id: 'listas', title: 'ajustes.section.listas', parts: [ScreeningSettings] },
  { id: 'apariencia', title: 'ajustes.section.apariencia', parts: [AppearanceSettings] },
  { id: 'acerca', title: 'ajustes.section.acerca', parts: [UpdateSettings, AboutTimbra] },
];

/** The section named in the route; the first (Este equipo) for none or an unknown one. */
export function sectionOf(id: string | undefined): SettingsSection {
  return SECTIONS.find((s) => s.id === id) ?? SECTIONS[0];
}
