"""Codecs generated from ``pykraft/metadata/schemas`` (``python -m pykraft.schema.generate``). Do not edit."""

from __future__ import annotations

from typing import Any, Final

from pykraft.metadata.records.abort_transaction_record import AbortTransactionRecord
from pykraft.metadata.records.access_control_entry_record import AccessControlEntryRecord
from pykraft.metadata.records.begin_transaction_record import BeginTransactionRecord
from pykraft.metadata.records.broker_registration_change_record import BrokerRegistrationChangeRecord
from pykraft.metadata.records.clear_elr_record import ClearElrRecord
from pykraft.metadata.records.client_quota_record import ClientQuotaRecord
from pykraft.metadata.records.config_record import ConfigRecord
from pykraft.metadata.records.delegation_token_record import DelegationTokenRecord
from pykraft.metadata.records.end_transaction_record import EndTransactionRecord
from pykraft.metadata.records.feature_level_record import FeatureLevelRecord
from pykraft.metadata.records.fence_broker_record import FenceBrokerRecord
from pykraft.metadata.records.no_op_record import NoOpRecord
from pykraft.metadata.records.partition_change_record import PartitionChangeRecord
from pykraft.metadata.records.partition_record import PartitionRecord
from pykraft.metadata.records.producer_ids_record import ProducerIdsRecord
from pykraft.metadata.records.register_broker_record import RegisterBrokerRecord
from pykraft.metadata.records.register_controller_record import RegisterControllerRecord
from pykraft.metadata.records.remove_access_control_entry_record import RemoveAccessControlEntryRecord
from pykraft.metadata.records.remove_delegation_token_record import RemoveDelegationTokenRecord
from pykraft.metadata.records.remove_topic_record import RemoveTopicRecord
from pykraft.metadata.records.remove_user_scram_credential_record import RemoveUserScramCredentialRecord
from pykraft.metadata.records.topic_record import TopicRecord
from pykraft.metadata.records.unfence_broker_record import UnfenceBrokerRecord
from pykraft.metadata.records.unregister_broker_record import UnregisterBrokerRecord
from pykraft.metadata.records.unregister_controller_record import UnregisterControllerRecord
from pykraft.metadata.records.user_scram_credential_record import UserScramCredentialRecord
from pykraft.metadata.records.zk_migration_state_record import ZkMigrationStateRecord

RECORD_TYPES: Final[dict[int, type[Any]]] = {
    0: RegisterBrokerRecord,
    1: UnregisterBrokerRecord,
    2: TopicRecord,
    3: PartitionRecord,
    4: ConfigRecord,
    5: PartitionChangeRecord,
    7: FenceBrokerRecord,
    8: UnfenceBrokerRecord,
    9: RemoveTopicRecord,
    10: DelegationTokenRecord,
    11: UserScramCredentialRecord,
    12: FeatureLevelRecord,
    14: ClientQuotaRecord,
    15: ProducerIdsRecord,
    17: BrokerRegistrationChangeRecord,
    18: AccessControlEntryRecord,
    19: RemoveAccessControlEntryRecord,
    20: NoOpRecord,
    21: ZkMigrationStateRecord,
    22: RemoveUserScramCredentialRecord,
    23: BeginTransactionRecord,
    24: EndTransactionRecord,
    25: AbortTransactionRecord,
    26: RemoveDelegationTokenRecord,
    27: RegisterControllerRecord,
    28: ClearElrRecord,
    29: UnregisterControllerRecord,
}
"""Metadata record classes by api key (the record type in the log)."""

__all__ = ['AbortTransactionRecord', 'AccessControlEntryRecord', 'BeginTransactionRecord', 'BrokerRegistrationChangeRecord', 'ClearElrRecord', 'ClientQuotaRecord', 'ConfigRecord', 'DelegationTokenRecord', 'EndTransactionRecord', 'FeatureLevelRecord', 'FenceBrokerRecord', 'NoOpRecord', 'PartitionChangeRecord', 'PartitionRecord', 'ProducerIdsRecord', 'RECORD_TYPES', 'RegisterBrokerRecord', 'RegisterControllerRecord', 'RemoveAccessControlEntryRecord', 'RemoveDelegationTokenRecord', 'RemoveTopicRecord', 'RemoveUserScramCredentialRecord', 'TopicRecord', 'UnfenceBrokerRecord', 'UnregisterBrokerRecord', 'UnregisterControllerRecord', 'UserScramCredentialRecord', 'ZkMigrationStateRecord']
