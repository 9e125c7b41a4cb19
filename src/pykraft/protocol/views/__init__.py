"""Typed views of the controller's requests (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from pykraft.protocol.views.create_topics import CreateTopicsRequest
from pykraft.protocol.views.delete_topics import DeleteTopicsRequest
from pykraft.protocol.views.describe_acls import DescribeAclsRequest
from pykraft.protocol.views.create_acls import CreateAclsRequest
from pykraft.protocol.views.delete_acls import DeleteAclsRequest
from pykraft.protocol.views.describe_configs import DescribeConfigsRequest
from pykraft.protocol.views.alter_configs import AlterConfigsRequest
from pykraft.protocol.views.create_partitions import CreatePartitionsRequest
from pykraft.protocol.views.create_delegation_token import CreateDelegationTokenRequest
from pykraft.protocol.views.renew_delegation_token import RenewDelegationTokenRequest
from pykraft.protocol.views.expire_delegation_token import ExpireDelegationTokenRequest
from pykraft.protocol.views.elect_leaders import ElectLeadersRequest
from pykraft.protocol.views.incremental_alter_configs import IncrementalAlterConfigsRequest
from pykraft.protocol.views.alter_partition_reassignments import AlterPartitionReassignmentsRequest
from pykraft.protocol.views.list_partition_reassignments import ListPartitionReassignmentsRequest
from pykraft.protocol.views.alter_client_quotas import AlterClientQuotasRequest
from pykraft.protocol.views.alter_user_scram_credentials import AlterUserScramCredentialsRequest
from pykraft.protocol.views.alter_partition import AlterPartitionRequest
from pykraft.protocol.views.update_features import UpdateFeaturesRequest
from pykraft.protocol.views.broker_registration import BrokerRegistrationRequest
from pykraft.protocol.views.broker_heartbeat import BrokerHeartbeatRequest
from pykraft.protocol.views.unregister_broker import UnregisterBrokerRequest
from pykraft.protocol.views.allocate_producer_ids import AllocateProducerIdsRequest
from pykraft.protocol.views.controller_registration import ControllerRegistrationRequest
from pykraft.protocol.views.assign_replicas_to_dirs import AssignReplicasToDirsRequest
from pykraft.protocol.views.unregister_controller import UnregisterControllerRequest

__all__ = ['AllocateProducerIdsRequest', 'AlterClientQuotasRequest', 'AlterConfigsRequest', 'AlterPartitionReassignmentsRequest', 'AlterPartitionRequest', 'AlterUserScramCredentialsRequest', 'AssignReplicasToDirsRequest', 'BrokerHeartbeatRequest', 'BrokerRegistrationRequest', 'ControllerRegistrationRequest', 'CreateAclsRequest', 'CreateDelegationTokenRequest', 'CreatePartitionsRequest', 'CreateTopicsRequest', 'DeleteAclsRequest', 'DeleteTopicsRequest', 'DescribeAclsRequest', 'DescribeConfigsRequest', 'ElectLeadersRequest', 'ExpireDelegationTokenRequest', 'IncrementalAlterConfigsRequest', 'ListPartitionReassignmentsRequest', 'RenewDelegationTokenRequest', 'UnregisterBrokerRequest', 'UnregisterControllerRequest', 'UpdateFeaturesRequest']
